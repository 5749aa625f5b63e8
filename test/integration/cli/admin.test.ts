import assert from 'node:assert/strict';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { systemClock } from '../../../src/clock.ts';
import { loadConfig } from '../../../src/config.ts';
import { databasePath, openDatabase } from '../../../src/db/connection.ts';
import { MIGRATIONS } from '../../../src/db/migrations/index.ts';
import { createContext } from '../../../src/services/context.ts';
import { DEMO_XPUB } from '../../../src/services/demo.ts';
import { OTHER_UID, powerlessRoot, runTill, TILL, tillJson } from '../../helpers/cli.ts';
import { testTpub, testXpub } from '../../helpers/keys.ts';
import { tempDir, tempMount } from '../../helpers/temp.ts';
import { runTillOnTerminal } from '../../helpers/terminal.ts';

const REGTEST = { TILL_NETWORK: 'regtest' };

describe('till admin CLI (real processes on a temp data dir)', () => {
  test('a data dir serves one network: opened for another, every command (serve too) refuses, naming both', async (t) => {
    const dataDir = tempDir(t);
    const store = await tillJson(['store', 'create', '--name', 'S', '--mode', 'live'], { dataDir, env: REGTEST });
    const key = testTpub('one-network');
    assert.equal((await runTill(['xpub', 'add', '--store', store.id, '--env', 'live', key], { dataDir, env: REGTEST })).code, 0);
    for (const args of [['store', 'list'], ['--port', '0', 'serve']]) {
      const r = await runTill(args, { dataDir, env: { TILL_NETWORK: 'signet' }, timeoutMs: 20_000 });
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, /holds a till for network "regtest" .*configured for "signet"\. Use another data directory for signet \(--data-dir\), or set network back to regtest/);
    }
    assert.equal((await runTill(['store', 'list'], { dataDir, env: REGTEST })).code, 0, 'its own network still opens it');
  });

  test('store create, list, show, set, archive', async (t) => {
    const dataDir = tempDir(t);
    const created = await tillJson(['store', 'create', '--name', "Bob's Bikes", '--mode', 'test', '--confirmations', '2'], { dataDir });
    assert.match(created.id, /^sto_/);
    assert.equal(created.confirmations_required, 2);
    assert.match(created.callback_secret, /^whsec_/);
    const list = await tillJson(['store', 'list'], { dataDir });
    assert.deepEqual(list.map((s: any) => s.id), [created.id]);
    assert.ok(!JSON.stringify(list).includes('whsec_'), 'the callback secret is shown once only');
    const set = await tillJson(['store', 'set', created.id, '--mode', 'live', '--expiry-minutes', '45', '--brand-color', '#112233', '--logo-url', 'https://shop.example/logo.png'], { dataDir });
    assert.equal(set.mode, 'live');
    assert.equal(set.expiry_minutes, 45);
    assert.equal(set.brand_color, '#112233');
    const human = await runTill(['store', 'show', created.id], { dataDir });
    assert.equal(human.code, 0);
    assert.match(human.stdout, /mode: live\s+confirmations: 2\s+expiry: 45 min/);
    // An empty value removes the logo or the colour (the page goes back to Till's look); the other stays.
    const noLogo = await tillJson(['store', 'set', created.id, '--logo-url', ''], { dataDir });
    assert.deepEqual([noLogo.logo_url, noLogo.brand_color], [null, '#112233']);
    const plain = await tillJson(['store', 'set', created.id, '--brand-color', ''], { dataDir });
    assert.deepEqual([plain.logo_url, plain.brand_color], [null, null]);
    const archived = await tillJson(['store', 'archive', created.id], { dataDir });
    assert.ok(archived.archived_at);
    const db = new Database(databasePath(dataDir), { readonly: true });
    t.after(() => db.close());
    const row = db.prepare('SELECT name, mode, expiry_minutes, archived_at FROM stores').get() as any;
    assert.equal(row.name, "Bob's Bikes");
    assert.equal(row.mode, 'live');
    assert.ok(row.archived_at > 0);
  });

  const badInvocations: Array<[string, string[], RegExp]> = [
    // Every bad choice, and every value a parser refuses, in the words of a bad setting ("--network must be one of …").
    ['unknown mode', ['store', 'create', '--name', 'x', '--mode', 'prod'], /^till: --mode must be one of live, test \(got "prod"\)$/m],
    ['unknown mode to set', ['store', 'set', 'sto_x', '--mode', 'prod'], /^till: --mode must be one of live, test \(got "prod"\)$/m],
    ['unknown key env', ['keys', 'mint', '--store', 'sto_x', '--env', 'prod'], /^till: --env must be one of live, test \(got "prod"\)$/m],
    ['unknown xpub env', ['xpub', 'add', '--store', 'sto_x', '--env', 'prod', 'xpub'], /^till: --env must be one of live, test \(got "prod"\)$/m],
    ['unknown delivery status', ['deliveries', 'list', '--status', 'dead'], /^till: --status must be one of attempting, success, failed, dead_letter \(got "dead"\)$/m],
    ['count not a number', ['xpub', 'skip', 'xpb_x', 'five'], /^till: <count> must be a whole number \(got "five"\)$/m],
    ['missing name', ['store', 'create', '--mode', 'test'], /required option '--name <name>'/],
    // A mistyped option is said as such, not as the required option it was meant to be, missing.
    ['mistyped required option', ['store', 'create', '--nme', 'x', '--mode', 'test'], /^till: unknown option '--nme' \(did you mean --name\?\)$/m],
    ['mistyped option beside a required one', ['webhooks', 'delete', '--stor', 'sto_x', 'we_x'], /^till: unknown option '--stor' \(did you mean --store\?\)$/m],
    ['confirmations out of range', ['store', 'create', '--name', 'x', '--mode', 'test', '--confirmations', '7'], /^till: --confirmations must be from 0 to 6 \(got "7"\)$/m],
    ['bad colour', ['store', 'create', '--name', 'x', '--mode', 'test', '--brand-color', 'red'], /brand_color must look like #1a2b3c/],
    ['unknown store', ['store', 'show', 'sto_nope'], /no store sto_nope/],
    ['unknown command', ['stores'], /unknown command 'stores'/],
    ['bad config', ['--port', 'eighty', 'store', 'list'], /--port must be an integer/],
    ['replay of nothing', ['deliveries', 'replay'], /give a delivery id or --all-dead$/m],
    ['replay of one and all', ['deliveries', 'replay', 'dlv_x', '--all-dead'], /give a delivery id or --all-dead, not both$/m],
    ['rotate without a store', ['webhooks', 'rotate'], /give --store <id> with --endpoint <id> or --callback/],
    ['store set with nothing to set', ['store', 'set', 'sto_x'], /give a setting to change \(--name, --mode, --confirmations, /],
  ];
  for (const [name, args, message] of badInvocations) {
    test(`bad input: ${name} → non-zero exit, one clear line on stderr (a usage error's then says where its help is), nothing written`, async (t) => {
      const dataDir = tempDir(t);
      openDatabase(dataDir).close();
      const r = await runTill(args, { dataDir });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, message);
      assert.match(r.stderr, /^till: /, 'worded as every other error');
      // The error, and for a usage error a line pointing at that command's help: not the whole help, burying it.
      const [, hint, ...more] = r.stderr.trimEnd().split('\n');
      if (hint !== undefined) assert.match(hint, /^\(see npm run till -- [a-z ]*--help\)$/);
      assert.deepEqual(more, []);
      assert.equal(r.stdout, '');
      const list = await tillJson(['store', 'list'], { dataDir });
      assert.deepEqual(list, []);
    });
  }

  test('an unknown command: the error, what was meant, and where the help is; exit 1 like every usage error', async () => {
    const top = await runTill(['stores']);
    assert.deepEqual([top.code, top.stderr], [1, "till: unknown command 'stores' (did you mean store?)\n(see npm run till -- --help)\n"]);
    const sub = await runTill(['deliveries', 'lsit']);
    assert.deepEqual([sub.code, sub.stderr], [1, "till: unknown command 'lsit' (did you mean list?)\n(see npm run till -- deliveries --help)\n"]);
    // What was typed, echoed: an escape sequence in it is shown, not sent to the terminal.
    const escape = await runTill(['\u001b[2J\u001b]0;owned\u0007']);
    assert.deepEqual([escape.code, escape.stderr], [1, "till: unknown command '\\u001b[2J\\u001b]0;owned\\u0007'\n(see npm run till -- --help)\n"]);
  });

  test('a bad setting flag is a usage error: the setting\'s line, then where the command\'s help is; from TILL_* or till.toml, the line alone', async (t) => {
    const dataDir = tempDir(t);
    const cases: Array<[string[], Record<string, string>, string]> = [
      [['serve', '--port', 'eighty'], {}, 'till: --port must be an integer from 0 to 65535\n(see npm run till -- serve --help)\n'],
      [['--network', 'mainnet', 'store', 'list'], {}, 'till: --network must be one of main, test, signet, regtest (got "mainnet")\n(see npm run till -- store list --help)\n'],
      [['store', 'list', '--data-dir', ''], {}, 'till: --data-dir must not be empty (default: ./data)\n(see npm run till -- store list --help)\n'],
      [['serve'], { TILL_PORT: 'eighty' }, 'till: TILL_PORT must be an integer from 0 to 65535\n'],
    ];
    for (const [args, env, stderr] of cases) {
      const r = await runTill(args, { dataDir, env });
      assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', stderr], args.join(' '));
    }
    writeFileSync(join(dataDir, 'till.toml'), 'port = "eighty"\n');
    const file = await runTill(['serve'], { dataDir });
    assert.deepEqual([file.code, file.stderr], [1, `till: ${join(dataDir, 'till.toml')}: port must be an integer from 0 to 65535\n`]);
  });

  test('a command group given no command: one line naming its commands, and where the help is, not the whole help; exit 1 like every usage error', async () => {
    const top = "till: missing command (init, serve, store, xpub, keys, webhooks, invoices, deliveries, backup, or config)\n(see npm run till -- --help)\n";
    const cases: Array<[string[], string]> = [
      [[], top],
      [['--json', '--network', 'signet'], top],
      [['store'], 'till: missing command (create, list, show, archive, or set)\n(see npm run till -- store --help)\n'],
      [['config'], 'till: missing command (show)\n(see npm run till -- config --help)\n'],
    ];
    for (const [args, stderr] of cases) {
      const r = await runTill(args);
      assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', stderr], args.join(' '));
    }
    const help = await runTill(['store', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: till store [^]*\n  create \[options\]\s+create a store\n[^]*\ndocs\/CONFIG\.md lists them all/, 'asked for, the help is whole');
  });

  test('help <command>: an unknown name is the error "till <name>" gives, not the whole help; a known one shows its help', async () => {
    const cases: Array<[string[], string]> = [
      [['help', 'bogus'], "till: unknown command 'bogus'\n(see npm run till -- --help)\n"],
      [['help', 'stor'], "till: unknown command 'stor' (did you mean store?)\n(see npm run till -- --help)\n"],
      [['help', 'store', 'bogus'], "till: unknown command 'bogus'\n(see npm run till -- store --help)\n"],
      [['store', 'help', 'creat'], "till: unknown command 'creat' (did you mean create?)\n(see npm run till -- store --help)\n"],
      [['help', 'store', 'create', 'extra'], "till: unknown command 'extra': create has no subcommands\n(see npm run till -- store create --help)\n"],
    ];
    for (const [args, stderr] of cases) {
      const r = await runTill(args);
      assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', stderr], args.join(' '));
    }
    for (const args of [['help', 'deliveries', 'replay'], ['deliveries', 'help', 'replay']]) {
      const r = await runTill(args);
      assert.equal(r.code, 0, args.join(' '));
      assert.match(r.stdout, /^Usage: till deliveries replay \[options\] \[id\]\n/, args.join(' '));
    }
    const top = await runTill(['help']);
    assert.equal(top.code, 0);
    assert.match(top.stdout, /^Usage: till \[options\] \[command\]\n[^]*\n  help \[command\.\.\.\]\s+display help for command\n/);
  });

  test('a mistyped data dir is an error for every command but store create: no empty database appears there', async (t) => {
    const typo = join(tempDir(t), 'typo');
    const commands = [['store', 'list'], ['store', 'show', 'sto_x'], ['keys', 'list', '--store', 'sto_x'], ['keys', 'mint', '--store', 'sto_x', '--env', 'test'], ['xpub', 'list', '--store', 'sto_x'], ['webhooks', 'list', '--store', 'sto_x'], ['deliveries', 'list']];
    for (const args of commands) {
      const r = await runTill(args, { dataDir: typo });
      assert.notEqual(r.code, 0, args.join(' '));
      assert.match(r.stderr, /no Till database in .*typo: check --data-dir/, args.join(' '));
      assert.equal(r.stdout, '');
      assert.equal(existsSync(typo), false, `${args.join(' ')} created nothing`);
    }
    // The first store of a new till makes its database, readable by its owner only.
    const created = await tillJson(['store', 'create', '--name', 'First', '--mode', 'test'], { dataDir: typo });
    assert.match(created.id, /^sto_/);
    assert.equal(statSync(databasePath(typo)).mode & 0o777, 0o600);
  });

  test('a database the command cannot open: the error says what to check, not just SQLite\'s words', async (t) => {
    const dataDir = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    // As a file another user owns looks to this one (root ignores permissions: a folder in its place fails the same way).
    rmSync(databasePath(dataDir));
    mkdirSync(databasePath(dataDir));
    const r = await runTill(['store', 'list'], { dataDir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /database: unable to open database file: can this user read and write the data directory and every file in it\?/);
  });

  test('a data dir another user owns: commands say to run as its owner, not that there is no database', async (t) => {
    const cannot = await powerlessRoot();
    if (cannot) return t.skip(cannot);
    const dataDir = join(tempDir(t), 'data');
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    execFileSync('chown', ['-R', `${OTHER_UID}:${OTHER_UID}`, dataDir]); // 0700: its owner's alone
    for (const args of [['store', 'list'], ['deliveries', 'list'], ['backup', '--out', tempDir(t)]]) {
      const r = await runTill(args, { dataDir, powerless: true });
      assert.equal(r.code, 1, args[0]);
      assert.equal(r.stderr, `till: cannot look in the data directory ${dataDir} (EACCES): run till as the user that owns it\n`, args.join(' '));
    }
    // One it may look in but not write: serve and init cannot make their files there.
    const empty = join(tempDir(t), 'empty');
    mkdirSync(empty, { mode: 0o755 });
    chownSync(empty, OTHER_UID, OTHER_UID);
    // The demo writes its settings first (its database after them).
    for (const [args, file] of [[['serve', '--port', '0', '--demo'], 'till.toml'], [['init', '--yes'], 'till.toml']] as const) {
      const r = await runTill([...args], { dataDir: empty, powerless: true });
      assert.equal(r.code, 1, args[0]);
      assert.equal(r.stderr, `till: cannot open ${join(empty, file)} (EACCES): can this user read and write the data directory and every file in it?\n`, args[0]);
    }
    assert.deepEqual(readdirSync(empty), []);
  });

  test('a data dir on a read-only mount (outside a systemd unit\'s ReadWritePaths=), or a backup\'s --out on one: said as such, not as permissions', async (t) => {
    const mount = tempMount(t, 4);
    if (!mount) return t.skip('cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)');
    const dataDir = join(mount, 'data');
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    execFileSync('mount', ['-o', 'remount,ro', mount]); // unmounted as it is when the test ends
    const out = tempDir(t);
    // A backup only reads, but SQLite writes the WAL index (till.db-shm) beside the database to read it.
    for (const args of [['serve', '--port', '0'], ['store', 'list'], ['backup', '--out', out]]) {
      const r = await runTill(args, { dataDir });
      assert.equal(r.code, 1, args[0]);
      assert.equal(r.stderr, `till: the data directory ${dataDir} is on a read-only file system, and Till writes there (under systemd: name it in the unit's ReadWritePaths=)\n`, args[0]);
    }
    assert.deepEqual(readdirSync(out), []);
    // A backup into the read-only mount: no permission would help.
    const writable = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir: writable });
    for (const into of [mount, join(mount, 'backups')]) {
      const r = await runTill(['backup', '--out', into], { dataDir: writable });
      assert.equal(r.code, 1, into);
      assert.match(r.stderr, /^till: cannot (write in|create) --out .* \(EROFS\): it is on a read-only file system; give a folder on a writable one\n$/, into);
    }
  });

  test('a data directory that cannot be made: the error names it and the setting', async (t) => {
    const blocker = join(tempDir(t), 'a-file');
    writeFileSync(blocker, '');
    for (const args of [['store', 'create', '--name', 'S', '--mode', 'test'], ['init', '--yes']]) {
      const r = await runTill(args, { dataDir: join(blocker, 'data') });
      assert.equal(r.code, 1, args[0]);
      assert.match(r.stderr, /cannot create the data directory .*a-file\/data \(ENOTDIR\): choose another with --data-dir \(or TILL_DATA_DIR\)/, args[0]);
    }
    const itself = await runTill(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir: blocker });
    assert.equal(itself.stderr, `till: cannot create the data directory ${blocker} (ENOTDIR): choose another with --data-dir (or TILL_DATA_DIR)\n`, 'a file where the data dir should be');
    // Under /proc, Node's own recursive mkdir spins for ever (runTill would kill it: code null).
    const proc = await runTill(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir: '/proc/till-test/data' });
    assert.equal(proc.code, 1);
    assert.equal(proc.stderr, 'till: cannot create the data directory /proc/till-test/data (ENOENT): choose another with --data-dir (or TILL_DATA_DIR)\n');
  });

  test('xpub add: formats, first addresses, one active key per store and env, refusals', async (t) => {
    const dataDir = tempDir(t);
    const env = REGTEST;
    const store = await tillJson(['store', 'create', '--name', 'S', '--mode', 'live'], { dataDir, env });
    const live = await tillJson(['xpub', 'add', '--store', store.id, '--env', 'live', '--gap-limit', '50', testTpub('cli')], { dataDir, env });
    assert.equal(live.xpub.script_type, 'p2pkh');
    assert.equal(live.xpub.gap_limit, 50);
    assert.equal(live.first_addresses.length, 3);
    for (const a of live.first_addresses) assert.match(a, /^[mn]/, 'a tpub gives legacy regtest addresses');
    // A descriptor with origin: the wrapper decides the script type.
    const desc = await tillJson(['xpub', 'add', '--store', store.id, '--env', 'live', `wpkh([d34db33f/84h/1h/0h]${testTpub('cli-2')}/0/*)`], { dataDir, env });
    assert.equal(desc.xpub.script_type, 'p2wpkh');
    for (const a of desc.first_addresses) assert.match(a, /^bcrt1q/);
    assert.equal(desc.retired.id, live.xpub.id, 'adding a key retires the active one');
    const human = await runTill(['xpub', 'add', '--store', store.id, '--env', 'test', DEMO_XPUB], { dataDir, env });
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /0\/0 {2}bcrt1qcr8te4kr609gcawutmrza0j4xv80jy8zeqchgx/, 'a test store may use a mainnet key; addresses are encoded for regtest');
    const all = await tillJson(['xpub', 'list', '--store', store.id], { dataDir, env });
    assert.deepEqual(all.map((x: any) => `${x.env}:${x.status}`).sort(), ['live:active', 'live:retired', 'test:active']);
    assert.equal(all.find((x: any) => x.id === live.xpub.id).gap_headroom, 45, 'gap limit 50 less the margin of 5, nothing handed out');
    assert.match((await runTill(['xpub', 'list', '--store', store.id], { dataDir, env })).stdout, /gap 45 of 50 left/);
    assert.equal((await tillJson(['xpub', 'skip', live.xpub.id, '10'], { dataDir, env })).next_index, 10);
    const badSkip = await runTill(['xpub', 'skip', live.xpub.id, '0'], { dataDir, env });
    assert.equal(badSkip.code, 1);
    assert.match(badSkip.stderr, /<count> must be from 1/);
    const back = await tillJson(['xpub', 'add', '--store', store.id, '--env', 'live', testTpub('cli')], { dataDir, env });
    assert.equal(back.xpub.id, live.xpub.id, 'a retired key added again comes back');
    assert.equal(back.xpub.gap_limit, 50, 'with its own gap limit, not the default');
    // The same key in another form (no key origin here; a descriptor there) derives the same addresses: it is
    // that key again, never a second one starting at index 0 over addresses already handed out.
    const again = await tillJson(['xpub', 'add', '--store', store.id, '--env', 'live', `wpkh(${testTpub('cli-2')}/0/*)`], { dataDir, env });
    assert.equal(again.xpub.id, desc.xpub.id);
    assert.equal(again.already_active, false, 'it was retired');
    // The active key added again (a setup script run twice) changes nothing, and says so rather than "added".
    const rerun = await runTill(['xpub', 'add', '--store', store.id, '--env', 'live', `wpkh(${testTpub('cli-2')}/0/*)`], { dataDir, env });
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stdout, new RegExp(`^${desc.xpub.id} \\(p2wpkh\\) is already the active live key of ${store.id} \\(gap limit 20\\)\n`));
    assert.doesNotMatch(rerun.stdout, /added|retired/);
    const other = await tillJson(['store', 'create', '--name', 'T', '--mode', 'live'], { dataDir, env });
    const shared = await runTill(['xpub', 'add', '--store', other.id, '--env', 'live', `pkh(${testTpub('cli')})`], { dataDir, env });
    assert.equal(shared.code, 1);
    assert.match(shared.stderr, new RegExp(`already registered for store ${store.id} \\(live\\)`));

    const refusals: Array<[string, string, RegExp]> = [
      ['a private key', 'tprv8ZgxMBicQKsPd9TeAdPADNnSyH9SSUUbTVeFszDE23Ki6TBB5nCefAdHkK8Fm3qMQR6sHwA56zqRmKmxnHk37JkiFzvncDqoKmPWubu7hDF', /PRIVATE key/],
      ['a mainnet key for a live regtest store', testXpub('cli'), /mainnet key .*regtest/],
      ['garbage', 'not-a-key', /xpub/],
      // Said as every other error is (lower case, no closing full stop), with what a key's length should be.
      ['a key cut short', testTpub('cli').slice(0, 100), /^till: wrong length for an extended public key: 100 characters, where an xpub, ypub, zpub, tpub, upub or vpub has 111; copy it again from your wallet, in full\n$/],
    ];
    for (const [what, key, message] of refusals) {
      const r = await runTill(['xpub', 'add', '--store', store.id, '--env', 'live', key], { dataDir, env });
      assert.notEqual(r.code, 0, what);
      assert.match(r.stderr, message, what);
      assert.match(r.stderr, /^till: [a-z][^\n]*[^.]\n$/, `${what}: one line, worded as the others`);
      if (key.length > 40) assert.ok(!r.stderr.includes(key.slice(10, 40)), `${what}: the key is not echoed back`);
    }
    // A private key typed into another argument is not echoed either, by Till's errors or by the argument parser's.
    const tprv = refusals[0]![1];
    // Nor the start of one, where a message cuts what it echoes to 64 characters.
    const cutting = [['xpub', 'skip', tprv, '5'], ['deliveries', 'show', tprv], ['webhooks', 'delete', '--store', store.id, tprv], ['webhooks', 'add', '--store', store.id, '--url', 'https://shop.example/h', '--events', tprv]];
    for (const args of [['xpub', 'add', '--store', tprv, '--env', 'live', testXpub('cli')], ['xpub', 'add', '--store', store.id, '--env', tprv, testXpub('cli')], ...cutting]) {
      const r = await runTill(args, { dataDir, env });
      assert.notEqual(r.code, 0);
      assert.ok(!r.stderr.includes(tprv.slice(10, 40)), `not echoed: ${r.stderr}`);
      assert.match(r.stderr, /tprv…\(a private key: removed\)/, args.join(' '));
    }
    const db = new Database(databasePath(dataDir), { readonly: true });
    t.after(() => db.close());
    assert.equal((db.prepare('SELECT COUNT(*) n FROM xpubs').get() as any).n, 3, 'refused keys were not stored');
    assert.equal((db.prepare("SELECT COUNT(*) n FROM xpubs WHERE key_text LIKE '%prv%'").get() as any).n, 0);

    await tillJson(['store', 'archive', store.id], { dataDir, env });
    for (const args of [['keys', 'mint', '--store', store.id, '--env', 'live'], ['xpub', 'add', '--store', store.id, '--env', 'live', testTpub('cli-3')]]) {
      const r = await runTill(args, { dataDir, env });
      assert.notEqual(r.code, 0, args[0]);
      assert.match(r.stderr, new RegExp(`store ${store.id} is archived`));
    }
    assert.equal((db.prepare('SELECT COUNT(*) n FROM api_keys').get() as any).n, 0, 'no key was minted for the archived store');
  });

  test('an archived store\'s webhooks are managed as before: its invoices\' events are still delivered', async (t) => {
    const dataDir = tempDir(t);
    const store = await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const before = await tillJson(['webhooks', 'add', '--store', store.id, '--url', 'https://shop.example/a'], { dataDir });
    await tillJson(['store', 'archive', store.id], { dataDir });
    const added = await tillJson(['webhooks', 'add', '--store', store.id, '--url', 'https://shop.example/b'], { dataDir });
    assert.deepEqual((await tillJson(['webhooks', 'list', '--store', store.id], { dataDir })).map((e: any) => e.id), [before.id, added.id]);
    assert.match((await tillJson(['webhooks', 'rotate', '--store', store.id, '--callback'], { dataDir })).secret, /^whsec_/);
    assert.match((await tillJson(['webhooks', 'rotate', '--store', store.id, '--endpoint', before.id], { dataDir })).secret, /^whsec_/);
  });

  test('keys mint prints the key once; only a hash and the last 4 are stored; revoke', async (t) => {
    const dataDir = tempDir(t);
    const store = await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const minted = await tillJson(['keys', 'mint', '--store', store.id, '--env', 'test'], { dataDir });
    assert.match(minted.key, /^svc_test_[0-9A-Za-z]{32}$/);
    const list = await runTill(['keys', 'list'], { dataDir });
    assert.ok(!list.stdout.includes(minted.key), 'never shown again');
    assert.match(list.stdout, new RegExp(`svc_test_…${minted.key.slice(-4)}`));
    const db = new Database(databasePath(dataDir), { readonly: true });
    t.after(() => db.close());
    const row = db.prepare('SELECT secret_hash, last4 FROM api_keys').get() as { secret_hash: Buffer; last4: string };
    assert.equal(row.secret_hash.length, 32);
    assert.equal(row.last4, minted.key.slice(-4));
    const dump = JSON.stringify(db.prepare('SELECT * FROM api_keys').all());
    assert.ok(!dump.includes(minted.key.slice(9, 30)));
    const revoked = await tillJson(['keys', 'revoke', minted.id], { dataDir });
    assert.ok(revoked.revoked_at);
    const again = await runTill(['keys', 'revoke', minted.id], { dataDir });
    assert.equal(again.code, 0);
    assert.equal(again.stdout, `already revoked ${minted.id} (svc_test_…${minted.key.slice(-4)}) at ${revoked.revoked_at}\n`, 'the first revocation\'s time stays');
  });

  test('a till.db of another program, or an empty one, is refused by every command and left as it is', async (t) => {
    const dataDir = tempDir(t);
    const other = new Database(databasePath(dataDir));
    other.exec('CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES (\'mine\')');
    other.close();
    const before = readFileSync(databasePath(dataDir));
    for (const args of [['store', 'list'], ['store', 'create', '--name', 'S', '--mode', 'test'], ['--port', '0', 'serve']]) {
      const r = await runTill(args, { dataDir, timeoutMs: 20_000 });
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, /till\.db is not a Till database \(it holds tables Till did not make\): check --data-dir/, args.join(' '));
    }
    assert.deepEqual(readFileSync(databasePath(dataDir)), before, 'not a byte changed');
    assert.deepEqual(readdirSync(dataDir).sort(), ['till.db'], 'no WAL, no secret.key');

    const empty = tempDir(t);
    writeFileSync(databasePath(empty), '');
    const r = await runTill(['store', 'list'], { dataDir: empty });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no Till database in/);
    assert.equal(statSync(databasePath(empty)).size, 0);
  });

  test('store create names both next steps; a key minted for the other mode says it is not usable yet', async (t) => {
    const dataDir = tempDir(t);
    const created = await runTill(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const id = /created (sto_\w+)/.exec(created.stdout)![1]!;
    assert.match(created.stdout, new RegExp(`next: till xpub add --store ${id} --env test <your wallet's xpub>, then till keys mint --store ${id} --env test\n$`));
    const live = await runTill(['keys', 'mint', '--store', id, '--env', 'live'], { dataDir });
    assert.equal(live.code, 0);
    // A warning, said as every warning is: on stderr, "till: warning: …", with --json too.
    assert.equal(live.stderr, `till: warning: the store is in test mode: this live key answers 401 api_key_wrong_env until till store set ${id} --mode live\n`);
    assert.match(live.stdout, /^svc_live_\w+\n\(key key_\w+: shown once, store it now; Till keeps only its hash\)\n$/);
    const json = await runTill(['--json', 'keys', 'mint', '--store', id, '--env', 'live'], { dataDir });
    assert.match(JSON.parse(json.stdout).key, /^svc_live_/);
    assert.match(json.stderr, /^till: warning: the store is in test mode/);
    assert.equal((await runTill(['keys', 'mint', '--store', id, '--env', 'test'], { dataDir })).stderr, '');
  });

  test('--store naming no store is an error, not an empty answer; with a delivery id, --store is refused', async (t) => {
    const dataDir = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const typo = 'sto_01m7yrrt80xqdbztbykwnv04zp';
    for (const args of [['keys', 'list'], ['xpub', 'list'], ['deliveries', 'list'], ['deliveries', 'replay', '--all-dead']]) {
      const r = await runTill([...args, '--store', typo], { dataDir });
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, new RegExp(`no store ${typo}`), args.join(' '));
    }
    const r = await runTill(['deliveries', 'replay', 'dlv_01m7yrrt80xqdbztbykwnv04zp', '--store', typo], { dataDir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--store goes with --all-dead/);
  });

  test('a database that needs upgrading is left alone while an older server runs on it; upgraded once it stopped', async (t) => {
    const dataDir = tempDir(t);
    // A data dir of the version before, its server (pid of a live process on this host) still running.
    const old = new Database(databasePath(dataDir));
    for (const m of MIGRATIONS.slice(0, -1)) {
      old.exec(m.sql);
      old.pragma(`user_version = ${m.version}`);
    }
    const server = spawn('sleep', ['60'], { stdio: 'ignore' });
    t.after(() => server.kill());
    const lease = { owner: 'older-till', pid: server.pid, host: hostname(), renewedAt: Date.now() };
    old.prepare("INSERT INTO meta (key, value) VALUES ('server_lease', ?)").run(JSON.stringify(lease));
    old.close();
    const refused = await runTill(['store', 'list'], { dataDir });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`needs upgrading .* a till serve \\(pid ${server.pid} on .*\\) is running on it.*stop or restart that server first`));
    const db = new Database(databasePath(dataDir), { readonly: true });
    assert.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length - 1, 'not upgraded');
    db.close();
    server.kill();
    await new Promise((r) => server.once('exit', r));
    const upgraded = await runTill(['store', 'list'], { dataDir });
    assert.equal(upgraded.code, 0);
    // A large database's upgrade takes a while: the command says what it is doing, once.
    assert.match(upgraded.stderr, new RegExp(`^till: upgrading the database to this version .*: schema ${MIGRATIONS.length - 1} to ${MIGRATIONS.length}\n$`));
    assert.equal((await runTill(['store', 'list'], { dataDir })).stderr, '');
    const after = new Database(databasePath(dataDir), { readonly: true });
    t.after(() => after.close());
    assert.equal(after.pragma('user_version', { simple: true }), MIGRATIONS.length);
  });

  test('flags whose name is not their setting\'s (--zmq, --bitcoind) are read and checked like the others', async (t) => {
    const dataDir = tempDir(t);
    const shown = await tillJson(['--zmq', 'tcp://127.0.0.1:28332', '--bitcoind', 'false', 'config', 'show'], { dataDir });
    assert.equal(shown['bitcoind.zmq'], 'tcp://127.0.0.1:28332');
    assert.equal(shown['bitcoind.enabled'], false);
    for (const [flag, value] of [['--zmq', 'nonsense'], ['--bitcoind', 'maybe']]) {
      const r = await runTill([flag!, value!, 'config', 'show'], { dataDir });
      assert.equal(r.code, 1, flag);
      assert.match(r.stderr, new RegExp(flag!), flag);
    }
  });

  test('config show masks secrets; --help and --version answer', async (t) => {
    const dataDir = tempDir(t);
    const shown = await tillJson(['config', 'show'], { dataDir, env: { TILL_RPC_PASSWORD: 'hunter2hunter2' } });
    assert.equal(shown['bitcoind.rpc_password'], '********');
    assert.equal((await runTill(['config', 'show'], { dataDir })).stderr, '', 'an existing data dir: no note');
    const typo = await runTill(['config', 'show'], { dataDir: `${dataDir}-typo` });
    assert.equal(typo.code, 0);
    assert.equal(typo.stderr, `till: warning: ${dataDir}-typo does not exist (yet): no till's settings file was read there; check --data-dir or TILL_DATA_DIR\n`);
    assert.match(typo.stdout, /^data_dir\s+.*-typo$/m);
    // A misspelt variable is said once, and the command runs as without it.
    const misspelt = await runTill(['config', 'show'], { dataDir, env: { TILL_PROT: '9000', TILL_CACHE_DIR: dataDir } });
    assert.equal(misspelt.code, 0);
    assert.equal(misspelt.stderr, 'till: warning: TILL_PROT is set but Till has no such setting: ignored (the settings and their variables: npm run till -- --help, docs/CONFIG.md)\n');
    assert.match(misspelt.stdout, /^port\s+8080$/m);
    const help = await runTill(['--help']);
    assert.equal(help.code, 0);
    for (const cmd of ['init', 'serve', 'store', 'xpub', 'keys', 'webhooks', 'invoices', 'deliveries', 'backup', 'config']) assert.match(help.stdout, new RegExp(`\\n\\s+${cmd}\\b`));
    const sub = await runTill(['xpub', 'add', '--help']);
    assert.match(sub.stdout, /--gap-limit/);
    assert.match(sub.stdout, /--data-dir/, 'global options are shown in subcommand help');
    assert.match(sub.stdout, /--store <id> +store id \(required\)\n/, 'a required option says so');
    assert.doesNotMatch(sub.stdout, /--gap-limit[^\n]*\(required\)/);
    const version = await runTill(['--version']);
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  });
});

describe('till init', () => {
  test('--yes writes the given settings to till.toml, which later commands read; it will not overwrite without --force', async (t) => {
    const dataDir = tempDir(t);
    const r = await runTill(['--json', '--network', 'signet', '--port', '9100', '--public-url', 'https://pay.example.com', 'init', '--yes'], { dataDir, env: { TILL_RPC_PASSWORD: 'pw-secret' } });
    assert.equal(r.code, 0, r.stderr);
    const written = JSON.parse(r.stdout);
    // The harness sets TILL_LOG_LEVEL=silent: the environment counts as given, like the flags.
    // Printed masked, as config show does; the file holds it.
    assert.deepEqual(written.settings, { network: 'signet', port: 9100, public_url: 'https://pay.example.com', log_level: 'silent', bitcoind: { rpc_password: '********' } });
    assert.ok(!r.stdout.includes('pw-secret'), 'the password is not printed');
    assert.match(readFileSync(written.path, 'utf8'), /rpc_password = "pw-secret"/);
    const shown = await tillJson(['config', 'show'], { dataDir });
    assert.equal(shown.network, 'signet');
    assert.equal(shown.port, 9100);
    assert.equal(shown['bitcoind.rpc_password'], '********');
    const again = await runTill(['init', '--yes'], { dataDir });
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /till\.toml exists/);
    // A file someone left readable by others: the replacement (which may hold an RPC password) is private again.
    chmodSync(written.path, 0o644);
    assert.equal((await runTill(['init', '--yes', '--force'], { dataDir })).code, 0);
    assert.equal(statSync(written.path).mode & 0o777, 0o600);
    assert.equal((await tillJson(['config', 'show'], { dataDir })).network, 'main', 'forced init with no flags writes the defaults');
  });

  test('refuses to write a till.toml the data dir would refuse (another network), or one a till.json beside it would lose to', async (t) => {
    const dataDir = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir, env: REGTEST });
    for (const args of [['init', '--yes'], ['init', '--yes', '--force']]) {
      const r = await runTill(args, { dataDir });
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, /holds a till for network "regtest": a till\.toml for "main" would make Till refuse it\. Give --network regtest/);
      assert.equal(existsSync(join(dataDir, 'till.toml')), false, 'nothing written');
    }
    assert.equal((await runTill(['--network', 'regtest', 'init', '--yes'], { dataDir })).code, 0);

    const withJson = tempDir(t);
    writeFileSync(join(withJson, 'till.json'), '{"port": 9100}');
    const r = await runTill(['init', '--yes', '--force'], { dataDir: withJson });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /till\.json exists: Till reads till\.toml before it/);
    assert.deepEqual(readdirSync(withJson), ['till.json']);
  });

  // On a terminal init asks. Keys: Enter takes a prompt's default, Ctrl-C stops setup.
  const ENTER = '\r';
  const CTRL_C = '\x03';

  test('on a terminal, an answer Till would refuse in till.toml is asked again, not written', async (t) => {
    const dataDir = tempDir(t);
    const term = runTillOnTerminal(['--data-dir', dataDir, 'init'], { TILL_NETWORK: 'regtest' });
    await term.expect(/Which Bitcoin network/, ENTER);
    await term.expect(/Port to listen/, ENTER);
    await term.expect(/Public URL/, 'https://pay.example.com:84430' + ENTER);
    await term.expect(/public_url must be an http\(s\) URL/, '\x7f'.repeat(30) + 'https://pay.example.com' + ENTER);
    // A box without internet prices USD invoices at a rate of its own.
    await term.expect(/USD rate sources/, '\x7f'.repeat(30) + 'fixed:65k' + ENTER);
    await term.expect(/must be USD per BTC/, '\x7f'.repeat(30) + 'fixed:65000' + ENTER);
    await term.expect(/bitcoind RPC URL/, ENTER);
    await term.expect(/cookie file/, ENTER);
    await term.expect(/Create your first store now\?/, CTRL_C);
    assert.equal(await term.closed, 1);
    const written = await tillJson(['config', 'show'], { dataDir });
    assert.deepEqual([written.public_url, written.rates], ['https://pay.example.com', 'fixed:65000']);
  });

  test('on a terminal, a key whose first addresses the operator says do not match is retired, never active', async (t) => {
    const dataDir = tempDir(t);
    const term = runTillOnTerminal(['--data-dir', dataDir, 'init'], { TILL_NETWORK: 'regtest' });
    for (const prompt of [/Which Bitcoin network/, /Port to listen/, /Public URL/, /USD rate sources/, /bitcoind RPC URL/, /cookie file/, /Create your first store now\?/]) await term.expect(prompt, ENTER);
    await term.expect(/Store name/, 'Shop' + ENTER);
    await term.expect(/Mode/, ENTER);
    await term.expect(/extended public key/, testTpub('init-wrong-wallet') + ENTER);
    await term.expect(/Do they match\?/, 'n');
    await term.expect(/That key was retired/);
    await term.expect(/extended public key/, CTRL_C);
    assert.equal(await term.closed, 1);
    // What is left to do, as commands that run as given.
    assert.match(term.output(), /no xpub and no API key yet: npm run till -- xpub add --store sto_[0-9a-z]+ --env live <xpub>, then npm run till -- keys mint --store sto_[0-9a-z]+ --env live\)/);
    const xpubs = await tillJson(['xpub', 'list'], { dataDir });
    assert.deepEqual(xpubs.map((x: { status: string }) => x.status), ['retired']);
  });
});

describe('till backup', () => {
  test('a backup restored into a new data dir has the stores, keys, readable webhook secrets and settings, and no server lease', async (t) => {
    const dataDir = tempDir(t);
    const out = tempDir(t);
    const store = await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const ep = await tillJson(['webhooks', 'add', '--store', store.id, '--url', 'https://shop.example/hook'], { dataDir });
    writeFileSync(join(dataDir, 'till.toml'), 'port = 9123\n', { mode: 0o600 });
    // The running server's lease (a live process on this host): a copy restored beside it must still start.
    const live = new Database(databasePath(dataDir));
    live.prepare("INSERT INTO meta (key, value) VALUES ('server_lease', ?)").run(JSON.stringify({ owner: 'running', pid: process.pid, host: hostname(), renewedAt: Date.now() }));
    live.close();
    const backup = await tillJson(['backup', '--out', out], { dataDir });
    assert.deepEqual(backup.files, ['till.db', 'secret.key', 'till.toml']);
    for (const f of backup.files) assert.equal(statSync(join(backup.path, f)).mode & 0o777, 0o600, `${f} is private`);
    // Restore: the files into an empty data dir.
    const restored = tempDir(t);
    for (const f of backup.files) copyFileSync(join(backup.path, f), join(restored, f));
    const stores = await tillJson(['store', 'list'], { dataDir: restored });
    assert.deepEqual(stores.map((s: any) => s.id), [store.id]);
    assert.equal((await tillJson(['config', 'show'], { dataDir: restored })).port, 9123);
    const copy = new Database(databasePath(restored), { readonly: true });
    assert.equal(copy.prepare("SELECT COUNT(*) FROM meta WHERE key = 'server_lease'").pluck().get(), 0, 'a backup is no running server');
    copy.close();
    const db = openDatabase(restored);
    t.after(() => db.close());
    const ctx = createContext(db, systemClock, loadConfig({ env: { TILL_DATA_DIR: restored } }));
    assert.equal(ctx.secrets.open(ctx.repos.webhookEndpoints.get(ep.id)!.secrets.secret), ep.secret, 'the sealed secret opens with the copied key');
    const again = await runTill(['backup'], { dataDir });
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /required option '--out <dir>'/);
  });

  test('a mistyped data dir is an error: nothing is created, neither there nor in --out', async (t) => {
    const parent = tempDir(t);
    const out = tempDir(t);
    const typo = join(parent, 'typo');
    const r = await runTill(['backup', '--out', out], { dataDir: typo });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /no Till database in .*typo/);
    assert.equal(existsSync(typo), false);
    assert.deepEqual(readdirSync(out), []);
  });

  test('--out naming a file is one clear error, and the file is left as it is', async (t) => {
    const dataDir = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const file = join(tempDir(t), 'notes.txt');
    writeFileSync(file, 'mine');
    const r = await runTill(['backup', '--out', file], { dataDir });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `till: --out ${file} is a file, not a folder: give the folder to put the backup in\n`);
    assert.equal(readFileSync(file, 'utf8'), 'mine');
    // Where no folder can be made (Node's own recursive mkdir spins for ever under /proc): one clear line.
    const proc = await runTill(['backup', '--out', '/proc/till-backup-test/x'], { dataDir });
    assert.equal(proc.code, 1);
    assert.equal(proc.stderr, 'till: cannot create --out /proc/till-backup-test/x (ENOENT): give a folder this user can write in\n');
  });

  test('--out this user cannot write in (made by another user, say root for the till user\'s nightly backup): one clear line, nothing left', async (t) => {
    const cannot = await powerlessRoot();
    if (cannot) return t.skip(cannot);
    const dataDir = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const out = join(tempDir(t), 'backups');
    mkdirSync(out, { mode: 0o755 });
    chownSync(out, OTHER_UID, OTHER_UID);
    const r = await runTill(['backup', '--out', out], { dataDir, powerless: true });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `till: cannot write in --out ${out} (EACCES): give a folder this user can write in\n`);
    assert.deepEqual(readdirSync(out), []);
  });

  test('a full disk where the backup goes: said as such, and no folder, whole or partial, is left', async (t) => {
    const dataDir = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    // ~2 MB of rows, more than the 1 MB file system below holds.
    const db = new Database(databasePath(dataDir));
    const fill = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
    db.transaction(() => { for (let i = 0; i < 500; i++) fill.run(`test-fill-${i}`, 'x'.repeat(4000)); })();
    db.close();
    const out = tempMount(t, 1);
    if (!out) return t.skip('cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)');
    const r = await runTill(['backup', '--out', out], { dataDir });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `till: no space left for the backup in --out ${out} (SQLITE_FULL): nothing was written; free some, or give another folder\n`);
    assert.deepEqual(readdirSync(out), []);
  });

  test('a backup copied in beside the old database\'s WAL (a restore that skipped deleting till.db-wal) is refused, and left whole', async (t) => {
    const dataDir = tempDir(t);
    await tillJson(['store', 'create', '--name', 'Before', '--mode', 'test'], { dataDir });
    const backup = await tillJson(['backup', '--out', tempDir(t)], { dataDir });
    // The old database goes on, and stops (killed, say) with its changes still in its WAL.
    const db = new Database(databasePath(dataDir));
    db.pragma('wal_autocheckpoint = 0');
    for (let i = 0; i < 50; i++) db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run(`test-after-${i}`, 'x'.repeat(2000));
    const wal = readFileSync(`${databasePath(dataDir)}-wal`);
    db.close();
    writeFileSync(`${databasePath(dataDir)}-wal`, wal);
    copyFileSync(join(backup.path, 'till.db'), databasePath(dataDir));
    for (const args of [['store', 'list'], ['serve', '--port', '0'], ['backup', '--out', tempDir(t)]]) {
      const r = await runTill(args, { dataDir });
      assert.equal(r.code, 1, args[0]);
      assert.match(r.stderr, /till\.db-wal belongs to the database that till\.db replaced \(a restored backup\?\): .* Delete .*till\.db-wal and .*till\.db-shm, then run the command again/, args[0]);
    }
    assert.deepEqual(readFileSync(databasePath(dataDir)), readFileSync(join(backup.path, 'till.db')), 'the restored file is as the backup wrote it');
    // Done as CONFIG.md says, the restore opens.
    rmSync(`${databasePath(dataDir)}-wal`);
    rmSync(`${databasePath(dataDir)}-shm`, { force: true });
    const stores = await tillJson(['store', 'list'], { dataDir });
    assert.deepEqual(stores.map((x: { name: string }) => x.name), ['Before']);
  });

  test('two backups in one second each get their folder; one of a data dir without secret.key says what that means', async (t) => {
    const dataDir = tempDir(t);
    const out = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const [a, b] = await Promise.all([tillJson(['backup', '--out', out], { dataDir }), tillJson(['backup', '--out', out], { dataDir })]);
    assert.notEqual(a.path, b.path);
    assert.equal(readdirSync(out).length, 2);
    rmSync(join(dataDir, 'secret.key'));
    const r = await runTill(['--json', 'backup', '--out', out], { dataDir });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).files, ['till.db']);
    assert.match(r.stderr, /secret\.key is missing, so this backup has none: the webhook secrets in it cannot be read; replace them after a restore \(till webhooks rotate --unreadable\)/);
  });

  test('a backup that cannot copy the secret key leaves no folder behind (one without the key would restore unreadable secrets)', async (t) => {
    const dataDir = tempDir(t);
    const out = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    // A key that cannot be copied (a directory in its place: chmod would not stop root).
    rmSync(join(dataDir, 'secret.key'));
    mkdirSync(join(dataDir, 'secret.key'));
    const r = await runTill(['backup', '--out', out], { dataDir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /EISDIR/);
    assert.deepEqual(readdirSync(out), []);
  });

  test('a backup killed part-way leaves no till-backup-* folder (restored, half a copy was an empty till); the next one is whole', async (t) => {
    const dataDir = tempDir(t);
    const out = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const writer = new Database(databasePath(dataDir));
    const fill = writer.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
    // ~80 MB: a copy that takes a while.
    writer.transaction(() => {
      for (let i = 0; i < 80; i++) fill.run(`fill:${i}`, 'x'.repeat(1 << 20));
    })();
    writer.close();
    const child = spawn(process.execPath, [TILL, '--data-dir', dataDir, 'backup', '--out', out], { stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    t.after(() => child.kill('SIGKILL'));
    const copying = () => readdirSync(out, { recursive: true, encoding: 'utf8' }).some((f) => f.endsWith('till.db') && statSync(join(out, f)).size > 1 << 20);
    for (let i = 0; i < 3000 && child.exitCode === null && !copying(); i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(child.exitCode, null, 'the backup was still copying (too quick to catch: make the database larger)');
    child.kill('SIGKILL');
    await exited;
    assert.deepEqual(readdirSync(out).filter((f) => f.startsWith('till-backup-')), []);
    const whole = await tillJson(['backup', '--out', out], { dataDir });
    assert.match(whole.path, /\/till-backup-[^/]+$/);
    assert.deepEqual(readdirSync(whole.path).sort(), ['secret.key', 'till.db']);
  });

  test('a backup taken while another connection commits all along finishes, consistent, and leaves the source as it was', async (t) => {
    const dataDir = tempDir(t);
    const out = tempDir(t);
    await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
    const writer = new Database(databasePath(dataDir));
    t.after(() => writer.close());
    // ~4 MB, so a copy takes many of the online backup's steps.
    const fill = writer.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
    writer.transaction(() => {
      for (let i = 0; i < 20_000; i++) fill.run(`fill:${i}`, 'x'.repeat(200));
    })();
    const version = writer.pragma('user_version', { simple: true });
    let commits = 0;
    const bump = writer.prepare("INSERT INTO meta (key, value) VALUES ('tick', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    const ticking = setInterval(() => (bump.run(String(++commits)), undefined), 2);
    t.after(() => clearInterval(ticking));
    const backup = await tillJson(['backup', '--out', out], { dataDir });
    clearInterval(ticking);
    assert.ok(commits > 0, 'the writer committed while the backup ran');
    const copy = new Database(join(backup.path, 'till.db'), { readonly: true });
    t.after(() => copy.close());
    assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
    assert.equal(copy.prepare("SELECT COUNT(*) FROM meta WHERE key LIKE 'fill:%'").pluck().get(), 20_000);
    assert.equal(copy.pragma('user_version', { simple: true }), version);
    assert.equal(writer.pragma('user_version', { simple: true }), version);
  });
});
