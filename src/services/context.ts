import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/connection.ts';
import { createAddressPoolRepo } from '../db/address-pool.ts';
import { createApiKeysRepo } from '../db/api-keys.ts';
import { createMetaRepo } from '../db/meta.ts';
import { createStoresRepo } from '../db/stores.ts';
import { createXpubsRepo } from '../db/xpubs.ts';

/** Everything a use case needs: the database with its repositories, the clock, the config. */
export interface Context {
  db: Db;
  clock: Clock;
  config: Config;
  repos: ReturnType<typeof createRepos>;
}

function createRepos(db: Db) {
  return {
    stores: createStoresRepo(db),
    apiKeys: createApiKeysRepo(db),
    xpubs: createXpubsRepo(db),
    addressPool: createAddressPoolRepo(db),
    meta: createMetaRepo(db),
  };
}

export function createContext(db: Db, clock: Clock, config: Config): Context {
  return { db, clock, config, repos: createRepos(db) };
}
