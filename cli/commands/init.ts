import * as p from '@clack/prompts';
import Database from 'better-sqlite3';
import { Command } from 'commander';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Bitcoind } from '../../src/bitcoin/bitcoind.ts';
import { cookiePathFor, createRpcClient, rpcUrlFor } from '../../src/bitcoin/node-connection.ts';
import { systemClock } from '../../src/clock.ts';
import { NETWORKS, SETTINGS, settingsTable, writeSettingsFile, type Config } from '../../src/config.ts';
import { databasePath, makeDataDir, openDatabase } from '../../src/db/connection.ts';
import { createMetaRepo } from '../../src/db/meta.ts';
import { mintApiKey } from '../../src/services/api-keys.ts';
import { checksBeforeUpgrade, createContext } from '../../src/services/context.ts';
import { createStore } from '../../src/services/stores.ts';
import { addXpub, retireXpub } from '../../src/services/xpubs.ts';
import { configFrom } from '../context.ts';
import { emit, tellUpgrade, TILL_COMMAND } from '../output.ts';

// First-time setup. On a terminal it asks; with --yes (or no terminal, as in
// scripts) it takes the flags and environment as they are. Either way it
// writes till.toml with the settings that differ from the defaults.

/** What setup has written so far, for an honest message if it is stopped. */
const written: string[] = [];

/** A prompt's answer; Ctrl-C (cancel) ends setup, saying what was already written. */
function answer<T>(value: T): Exclude<T, symbol> {
  if (p.isCancel(value)) {
    p.cancel(written.length === 0 ? 'Nothing was written.' : `Stopped. Already written: ${written.join('; ')}.`);
    process.exit(1);
  }
  return value as Exclude<T, symbol>;
}

/** A prompt's check by the setting's own parser: init never writes a till.toml that Till then refuses. */
function validAs(key: keyof Config): (value: string | undefined) => string | undefined {
  const setting = SETTINGS.find((s) => s.key === key)!;
  return (value) => {
    try {
      setting.parse(value ?? '', setting.file);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  };
}

async function ask(config: Config): Promise<Config> {
  p.intro('Till setup');
  const network = answer(await p.select({
    message: 'Which Bitcoin network does your node run?',
    options: NETWORKS.map((n) => ({ value: n, label: n })),
    initialValue: config.network,
  }));
  const port = Number(answer(await p.text({
    message: 'Port to listen on (Till listens on 127.0.0.1 only; put a TLS proxy in front for buyers)',
    initialValue: String(config.port),
    validate: validAs('port'),
  })));
  const publicUrl = answer(await p.text({
    message: 'Public URL buyers reach Till at (empty: the listen address)',
    initialValue: config.publicUrl,
    validate: validAs('publicUrl'),
  }));
  const rates = answer(await p.text({
    message: 'USD rate sources, for invoices priced in USD (kraken,bitstamp,coinbase; fixed:<usd> on a box without internet)',
    initialValue: config.rates,
    validate: validAs('rates'),
  }));
  const next: Config = { ...config, network, port, publicUrl: publicUrl.replace(/\/+$/, ''), rates };
  const rpcUrl = answer(await p.text({ message: 'bitcoind RPC URL', initialValue: rpcUrlFor(next), validate: validAs('rpcUrl') }));
  const cookie = answer(await p.text({ message: 'bitcoind cookie file (RPC credentials)', initialValue: cookiePathFor(next), validate: validAs('rpcCookieFile') }));
  const withNode: Config = { ...next, rpcUrl: rpcUrl === rpcUrlFor(next) ? '' : rpcUrl, rpcCookieFile: cookie === cookiePathFor(next) ? '' : cookie };
  const spin = p.spinner();
  spin.start('Asking bitcoind');
  try {
    const info = await new Bitcoind(createRpcClient(withNode)).getChainInfo();
    spin.stop(`bitcoind answers: chain ${info.chain}, ${info.blocks} blocks${info.initialBlockDownload ? ' (still syncing)' : ''}`);
  } catch (err) {
    spin.stop(`bitcoind did not answer (${(err as Error).message}); the settings are kept, Till will keep trying`);
  }
  return withNode;
}

async function firstStore(config: Config): Promise<void> {
  if (!answer(await p.confirm({ message: 'Create your first store now?', initialValue: true }))) return;
  const db = openDatabase(config.dataDir, { synchronous: config.synchronous, beforeUpgrade: checksBeforeUpgrade(config, () => systemClock.now()), onUpgrade: tellUpgrade });
  try {
    const ctx = createContext(db, systemClock, config);
    const name = answer(await p.text({ message: 'Store name (shown to buyers)', validate: (v) => (v?.trim() ? undefined : 'a name') }));
    const mode = answer(await p.select({ message: 'Mode', options: [{ value: 'live' as const, label: 'live: real payments' }, { value: 'test' as const, label: 'test: simulated invoices' }] }));
    const { store, callbackSecret } = createStore(ctx, { name, mode });
    // What to run if stopped before the key is confirmed: no key, so no API key either.
    written.push(`store ${store.id} (${name}, no xpub and no API key yet: ${TILL_COMMAND} xpub add --store ${store.id} --env ${mode} <xpub>, then ${TILL_COMMAND} keys mint --store ${store.id} --env ${mode})`);
    p.note(`Callback secret:  ${callbackSecret}`, "Shown once: it signs deliveries to invoices' callback_url");
    for (;;) {
      const key = answer(await p.text({ message: `Your wallet's extended public key (xpub/zpub/… or a descriptor) for ${mode} invoices` }));
      try {
        const added = addXpub(ctx, { storeId: store.id, env: mode, key });
        p.note(added.firstAddresses.map((a, i) => `0/${i}  ${a}`).join('\n'), 'First receive addresses: they must match your wallet');
        const matches = await p.confirm({ message: 'Do they match?' });
        if (matches === true) break;
        // No, or stopped here: a key the operator did not confirm never takes a payment.
        retireXpub(ctx, added.xpub.id);
        answer(matches);
        p.log.warn('That key was retired. Check it (and the wallet\'s derivation path), then enter it again.');
      } catch (err) {
        p.log.error((err as Error).message);
      }
    }
    const { key } = mintApiKey(ctx, store.id, mode);
    p.note(`API key:  ${key}`, 'Shown once: store it now');
  } finally {
    db.close();
  }
}

/** The network the data dir's database was first used with, or null; read only: init opens no database for writing before it asks. */
function recordedNetwork(dataDir: string): string | null {
  if (!existsSync(databasePath(dataDir))) return null;
  let db: Database.Database | null = null;
  try {
    db = new Database(databasePath(dataDir), { readonly: true, fileMustExist: true });
    return createMetaRepo(db).get('network');
  } catch {
    // Not a Till database, or one from before the network was recorded: the first command says what is wrong.
    return null;
  } finally {
    db?.close();
  }
}

export function initCommand(): Command {
  return new Command('init')
    .description('first-time setup: write till.toml (asks on a terminal; --yes takes the flags as given)')
    .option('-y, --yes', 'do not ask: write the settings given by flags and environment')
    .option('--force', 'overwrite an existing till.toml')
    .action(async function (this: Command) {
      const o = this.opts();
      let config = configFrom(this, { ignoreFile: true });
      const path = join(config.dataDir, 'till.toml');
      if (existsSync(path) && !o.force) this.error(`${path} exists; edit it, or run init --force to replace it`);
      const json = join(config.dataDir, 'till.json');
      if (existsSync(json)) this.error(`${json} exists: Till reads till.toml before it, so its settings would stop counting; edit it, or move it away first`);
      const interactive = !o.yes && process.stdin.isTTY && process.stdout.isTTY;
      if (interactive) config = await ask(config);
      const held = recordedNetwork(config.dataDir);
      if (held !== null && held !== config.network) {
        this.error(`${config.dataDir} holds a till for network "${held}": a till.toml for "${config.network}" would make Till refuse it. Give --network ${held}, or another --data-dir`);
      }
      makeDataDir(config.dataDir);
      written.push(writeSettingsFile(config, 'Written by till init.'));
      if (interactive) {
        await firstStore(config);
        p.outro(`Wrote ${path}. Start Till with: ${TILL_COMMAND} serve --data-dir ${config.dataDir}`);
      } else {
        emit(this.optsWithGlobals(), { path, settings: settingsTable(config, true) }, () => `wrote ${path}`);
      }
    });
}
