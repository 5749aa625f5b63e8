#!/usr/bin/env sh
# Till installer — placeholder until the single-binary release exists.
#
# What it will do: download nothing from outside the package registries;
# build (or unpack) the single `till` executable (Node SEA, see
# ../shared/TOOLCHAIN.md), put it in /usr/local/bin, create a `till` system
# user and /var/lib/till, and install assets/till.service for systemd.
#
# Until then, run Till from a checkout:
#   npm ci && npm start                  # demo on regtest, no bitcoind needed
#   npm run till -- serve --data-dir /var/lib/till
echo "install.sh: the single-binary installer is not built yet; see README.md to run Till from a checkout." >&2
exit 1
