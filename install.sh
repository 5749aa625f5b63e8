#!/bin/sh
# Installs Till's single binary (see README.md, "Install the binary").
# Every check runs before anything is changed: it refuses rather than
# half-installs. POSIX sh; downloads nothing.
set -eu

usage() {
  cat <<'EOF'
Usage: ./install.sh [options]

Installs the till executable. It takes dist/till, or builds it first with
`npm run build` when there is none (needs `npm ci` done).

Options:
  --prefix DIR     directory to put `till` in (default /usr/local/bin)
  --binary FILE    install this executable instead of dist/till (on a
                   Raspberry Pi: the dist/till-linux-arm64 copied over)
  --build          build dist/till again even if there is one
  --system         also (as root) create the `till` system user, /var/lib/till
                   and /var/cache/till, and install the systemd unit
                   /etc/systemd/system/till.service
  --dry-run        print what would be done, change nothing
  -h, --help       this help
EOF
}

die() {
  echo "install.sh: $*" >&2
  exit 1
}

HERE=$(cd "$(dirname "$0")" && pwd)
PREFIX=/usr/local/bin
BINARY=
BUILD=no
SYSTEM=no
DRY=no
DATA_DIR=/var/lib/till
UNIT_DIR=/etc/systemd/system

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX=$2; shift 2 ;;
    --prefix=*) PREFIX=${1#--prefix=}; shift ;;
    --binary) [ $# -ge 2 ] || die "--binary needs a file"; BINARY=$2; shift 2 ;;
    --binary=*) BINARY=${1#--binary=}; shift ;;
    --build) BUILD=yes; shift ;;
    --system) SYSTEM=yes; shift ;;
    --dry-run) DRY=yes; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
done
case "$PREFIX" in
  /*) ;;
  *) die "--prefix must be an absolute path, not '$PREFIX'" ;;
esac
# It goes into the unit's ExecStart through sed.
case "$PREFIX" in
  *'|'* | *'&'* | *'\'* | *' '*) die "--prefix must not contain |, &, \\ or spaces: '$PREFIX'" ;;
esac
CACHE_DIR=/var/cache/till

# Runs a command, or only shows it with --dry-run.
run() {
  echo "+ $*"
  [ "$DRY" = yes ] || "$@"
}

# --- checks: nothing below changes the machine until they all passed ---

if [ "$SYSTEM" = yes ]; then
  [ "$(id -u)" -eq 0 ] || [ "$DRY" = yes ] || die "--system creates a user and installs a systemd unit: run it as root (or add --dry-run to see what it would do)"
  command -v useradd >/dev/null 2>&1 || die "--system needs useradd (package passwd)"
  [ -d "$UNIT_DIR" ] || die "--system installs a systemd unit, but $UNIT_DIR does not exist (no systemd?)"
  [ -f "$HERE/assets/till.service" ] || die "assets/till.service is missing next to install.sh"
fi

VERSION=
if [ -z "$BINARY" ]; then
  BINARY=$HERE/dist/till
  if [ "$BUILD" = yes ] || [ ! -f "$BINARY" ]; then
    [ -d "$HERE/node_modules" ] || die "no dist/till to install and no node_modules to build it with: run \`npm ci\` first (or give --binary FILE)"
    command -v npm >/dev/null 2>&1 || die "no dist/till to install and no npm to build it with (or give --binary FILE)"
    if [ "$DRY" = yes ]; then
      echo "+ npm run build   (dry run: not built, so not tried either)"
      VERSION="(not built yet)"
    else
      (cd "$HERE" && npm run --silent build) || die "the build failed (see above); nothing was installed"
    fi
  fi
fi

if [ -z "$VERSION" ]; then
  [ -f "$BINARY" ] && [ -x "$BINARY" ] || die "$BINARY is not an executable file"
  # It must run here before it replaces anything (--version loads no native
  # addon, so it writes no cache folder, not even into root's home).
  VERSION=$("$BINARY" --version 2>&1) || die "$BINARY does not run on this machine: $VERSION
(one built for another machine, e.g. npm run build -- --target linux-arm64 for a
Raspberry Pi, is installed there: README.md, \"Install the binary\")"
fi

if [ -d "$PREFIX" ]; then
  [ -w "$PREFIX" ] || [ "$DRY" = yes ] || die "cannot write to $PREFIX: run as root, or choose another --prefix"
else
  PARENT=$(dirname "$PREFIX")
  while [ ! -d "$PARENT" ]; do PARENT=$(dirname "$PARENT"); done
  [ -w "$PARENT" ] || [ "$DRY" = yes ] || die "cannot create $PREFIX: run as root, or choose another --prefix"
fi

# --- install ---

echo "installing till $VERSION to $PREFIX/till"
run mkdir -p "$PREFIX"
# Copied under a temporary name, then renamed: a running till is never left with half a file.
run cp "$BINARY" "$PREFIX/.till.new.$$"
run chmod 755 "$PREFIX/.till.new.$$"
run mv -f "$PREFIX/.till.new.$$" "$PREFIX/till"

if [ "$SYSTEM" = yes ]; then
  if id till >/dev/null 2>&1; then
    echo "user till exists: kept"
  else
    run useradd --system --user-group --home-dir "$DATA_DIR" --no-create-home --shell /usr/sbin/nologin till
  fi
  run mkdir -p "$DATA_DIR" "$CACHE_DIR"
  run chown till:till "$DATA_DIR" "$CACHE_DIR"
  run chmod 700 "$DATA_DIR" "$CACHE_DIR"
  echo "+ install assets/till.service as $UNIT_DIR/till.service (ExecStart=$PREFIX/till)"
  if [ "$DRY" = no ]; then
    sed "s|^ExecStart=/usr/local/bin/till |ExecStart=$PREFIX/till |" "$HERE/assets/till.service" >"$UNIT_DIR/till.service.new"
    chmod 644 "$UNIT_DIR/till.service.new"
    mv -f "$UNIT_DIR/till.service.new" "$UNIT_DIR/till.service"
  fi
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then run systemctl daemon-reload; fi
  cat <<EOF

Next, as the till user (every till command on $DATA_DIR: one run as root
leaves files the service cannot open), with the service's cache folder:
  sudo -u till env TILL_CACHE_DIR=$CACHE_DIR $PREFIX/till --data-dir $DATA_DIR init
The till user must be able to read bitcoind's cookie file (bitcoind
-rpccookieperms=group, and add till to bitcoind's group), or give an -rpcauth
user as bitcoind.rpc_user and bitcoind.rpc_password (docs/CONFIG.md).
Then start it:
  sudo systemctl enable --now till
On a machine without a clock battery (a Raspberry Pi), also
  sudo systemctl enable systemd-time-wait-sync
so Till starts once NTP has set the clock (invoices expire by it).
EOF
else
  cat <<EOF

Try it: $PREFIX/till serve --demo
A service with its own user and data directory: run again as root with --system
(or see assets/till.service).
EOF
fi
[ "$DRY" = no ] || echo "(dry run: nothing was changed)"
