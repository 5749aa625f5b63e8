import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { openDatabase } from './db/connection.ts';
import { LATEST_SCHEMA_VERSION } from './db/migrate.ts';
import { createLogger, type Logger } from './log.ts';
import { refillAddressPool } from './services/address-pool.ts';
import { createContext, type Context } from './services/context.ts';
import { VERSION } from './version.ts';

export interface HealthReport {
  status: 'ok' | 'degraded';
  version: string;
  network: Config['network'];
  schema_version: number;
  uptime_seconds: number;
}

/**
 * One running Till: the database, the use-case context and the background
 * workers. The HTTP app and the CLI's `serve` are built on it; tests build it
 * with a ManualClock and a temp data dir.
 */
export interface Runtime {
  ctx: Context;
  logger: Logger;
  health(): HealthReport;
  /** Starts background work (pool refills, and later the chain watcher and workers). */
  start(): void;
  stop(): Promise<void>;
}

export interface RuntimeOptions {
  clock?: Clock;
  logger?: Logger;
}

export function createRuntime(config: Config, opts: RuntimeOptions = {}): Runtime {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.logLevel);
  const db = openDatabase(config.dataDir, { synchronous: config.synchronous });
  const ctx = createContext(db, clock, config);
  const startedAt = clock.now();
  let stopped = false;

  async function refillAllPools(): Promise<void> {
    for (const x of ctx.repos.xpubs.listActive()) {
      if (stopped) return;
      await refillAddressPool(ctx, x.id);
    }
  }

  return {
    ctx,
    logger,
    health: () => ({
      status: 'ok',
      version: VERSION,
      network: config.network,
      schema_version: LATEST_SCHEMA_VERSION,
      uptime_seconds: Math.floor((clock.now() - startedAt) / 1000),
    }),
    start() {
      refillAllPools().catch((err) => logger.error({ err }, 'address pool refill failed'));
    },
    async stop() {
      stopped = true;
      db.close();
    },
  };
}
