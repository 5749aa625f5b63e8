import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_FILES, DEFAULTS, DEMO_DEFAULTS, writeSettingsFile, type Config } from '../config.ts';
import { inTransaction } from '../db/connection.ts';
import { mintApiKey } from './api-keys.ts';
import type { Context } from './context.ts';
import { createStore } from './stores.ts';
import { addXpub } from './xpubs.ts';

// The BIP84 test vector's account key (mnemonic "abandon … about"): its
// private key is public knowledge, which is exactly right for a demo store
// whose invoices are simulated. Never use it for real money.
export const DEMO_XPUB = 'zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs';

/**
 * On the first start of an empty data dir, creates a test-mode store with a
 * key and an API key, so `npm start` gives a till that can take a test
 * invoice straight away. Returns the API key and the store's callback_url
 * secret (both shown once) or null when the data dir was already set up.
 */
export function seedDemo(ctx: Context): { storeId: string; apiKey: string; callbackSecret: string } | null {
  // One transaction: a crash half-way leaves no flag without its store, and no store without its key.
  return inTransaction(ctx.db, () => {
    if (ctx.repos.meta.get('demo_seeded') || ctx.repos.stores.list().length > 0) return null;
    ctx.repos.meta.set('demo_seeded', new Date(ctx.clock.now()).toISOString());
    const { store, callbackSecret } = createStore(ctx, { name: 'Demo Store', mode: 'test' });
    addXpub(ctx, { storeId: store.id, env: 'test', key: DEMO_XPUB });
    const { key } = mintApiKey(ctx, store.id, 'test');
    return { storeId: store.id, apiKey: key, callbackSecret };
  });
}

/**
 * The demo's settings, as it runs with them (a flag or variable may have
 * changed one), written to its data directory on its first start, so that
 * every command there uses them: the CLI (without --demo) would take the
 * defaults, a mainnet till, and refuse the demo's regtest data. Null when the
 * data directory has a settings file already.
 */
export function writeDemoSettings(config: Config): string | null {
  if (CONFIG_FILES.some((f) => existsSync(join(config.dataDir, f)))) return null;
  const demo = Object.fromEntries(Object.keys(DEMO_DEFAULTS).map((k) => [k, config[k as keyof Config]]));
  return writeSettingsFile({ ...DEFAULTS, ...demo, dataDir: config.dataDir }, "Written by till serve --demo on its first start: the demo's settings, which every command on this data directory uses.");
}
