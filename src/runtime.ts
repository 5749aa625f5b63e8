import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { startDbThread, type DbThread } from './db/db-thread.ts';
import { openDatabase } from './db/connection.ts';
import { UPGRADE_NOTICE } from './db/migrate.ts';
import { openWalSync } from './db/wal-sync.ts';
import { healthReport, type HealthReport } from './health.ts';
import { createLogger, type Logger } from './log.ts';
import { listLoosePermissions } from './loose-permissions.ts';
import { parseRateSources } from './rates/provider.ts';
import { RateService, type StoredRate } from './rates/rate-service.ts';
import { refillAddressPool } from './services/address-pool.ts';
import { checksBeforeUpgrade, createContext, type Context } from './services/context.ts';
import { ExternalChanges } from './services/external-changes.ts';
import { IDEMPOTENCY_TTL_MS, expireDueInvoices, startListingInvoices } from './services/invoices.ts';
import { acquireServerLease, LEASE_RENEW_MS, LeaseLostError } from './services/server-lease.ts';
import { listUnreadableSecrets } from './services/webhooks.ts';
import { repairSharedKeys } from './services/xpubs.ts';
import { startLoop } from './services/workers.ts';
import { DeliveryWorker } from './webhooks/delivery-worker.ts';
import { Bitcoind } from './bitcoin/bitcoind.ts';
import { ChainWatcher } from './bitcoin/chain-watcher.ts';
import { createRpcClient } from './bitcoin/node-connection.ts';

/**
 * One running Till: the database, the use-case context and the background
 * workers. The HTTP app and the CLI's `serve` are built on it; tests build it
 * with a ManualClock and a temp data dir.
 */
export interface Runtime {
  ctx: Context;
  logger: Logger;
  webhooks: DeliveryWorker;
  /** Null when the chain is not watched (bitcoind.enabled = false, e.g. the demo). */
  chain: ChainWatcher | null;
  /** Publishes invoice changes other processes (the CLI) commit; checkout streams watch through it. */
  externalChanges: ExternalChanges;
  /** Period of the checkout streams' heartbeat (15 s). */
  streamHeartbeatMs: number;
  /** Aborted by beginStop(): what serves buyers live (checkout streams) winds down. */
  stopping: AbortSignal;
  /** The first step of stopping, before the HTTP server's grace: live streams end (1001), pages reconnect to the next till. */
  beginStop(): void;
  health(): HealthReport;
  /** Starts the db thread (WAL checkpoints, off-loop commits of webhook outcomes); start() does it too. */
  startDbThread(): void;
  /** Starts background work (rate refresh, chain watcher, webhooks, expiry, pool refills, housekeeping); throws LeaseHeldError if another server runs on the data dir. */
  start(): void;
  stop(): Promise<void>;
}

export interface RuntimeOptions {
  clock?: Clock;
  logger?: Logger;
  /** Tests point the exchange providers at a local fake. */
  rateBaseUrls?: { kraken?: string; bitstamp?: string; coinbase?: string };
  expiryIntervalMs?: number;
  /** How often Idempotency-Keys past their 24 hours are deleted (a minute); tests shorten it. */
  idempotencyPurgeIntervalMs?: number;
  /** Per-attempt webhook timeout (spec: 10 s); tests shorten it. */
  webhookTimeoutMs?: number;
  /** Checkout stream heartbeat period (15 s); tests shorten it. */
  streamHeartbeatMs?: number;
  /** Called when Till must not go on (bitcoind on another network, another server took the lease): `serve` exits. */
  onFatal?: (message: string) => void;
  /** Re-sync timer of the chain watcher (30 s). */
  chainResyncMs?: number;
}

const RATE_KEY = 'usd_rate';
// The server's page cache: the index pages a creation inserts into stay in
// memory on a large database; it fills only as pages are read
// (docs/DECISIONS.md).
const SERVER_PAGE_CACHE_MIB = 32;

export function createRuntime(config: Config, opts: RuntimeOptions = {}): Runtime {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger(config.logLevel);
  const providers = parseRateSources(config.rates, { baseUrls: opts.rateBaseUrls });
  const db = openDatabase(config.dataDir, {
    synchronous: config.synchronous,
    busyTimeoutMs: config.busyTimeoutMs,
    cacheMiB: SERVER_PAGE_CACHE_MIB,
    beforeUpgrade: checksBeforeUpgrade(config, () => clock.now()),
    onUpgrade: (from, to) => logger.info({ from, to }, UPGRADE_NOTICE),
  });
  const ctx = createContext(db, clock, config);
  try {
    checkSecretKey(ctx, logger);
    for (const r of repairSharedKeys(ctx)) {
      logger.warn(
        { xpubs: r.xpubIds, kept: r.kept, retired: r.retired, next_index: r.nextIndex },
        `xpubs ${r.xpubIds.join(', ')} are one key (added in two forms by an older Till) and would hand out the same addresses: ${r.kept} goes on from index ${r.nextIndex}, past every address any of them handed out${r.retired.length ? `, and ${r.retired.join(', ')} is retired (till xpub list)` : ''}`,
      );
    }
  } catch (err) {
    db.close();
    throw err;
  }
  const loose = listLoosePermissions(config.dataDir);
  if (loose.length) logger.warn({ files: loose }, `other users may read ${loose.join(', ')} in the data directory: chmod 600 them (key hashes, sealed webhook secrets and the key that opens them)`);
  // The group commits' fsync off the event loop (docs/DECISIONS.md); with
  // synchronous=NORMAL configured there is no fsync to move.
  const walSync = config.synchronous === 'FULL' ? openWalSync(db) : null;
  let durabilityError: string | null = null;
  void ctx.writes.useWalSync(walSync, (err) => {
    durabilityError = err.message;
    logger.error({ err }, 'the WAL could not be made durable: Till answers nothing from its database until it is restarted');
    // The chain watcher writes outside the queue: what it publishes goes nowhere from here.
    ctx.feed.close();
    // Every write would be refused: the workers stop rather than fail once a second each.
    stopWork().catch((error) => logger.error({ err: error }, 'stopping the background workers failed'));
  });
  ctx.rates = new RateService({
    providers,
    clock,
    logger,
    store: {
      load: () => ctx.repos.meta.getJson<StoredRate>(RATE_KEY),
      // Through the write queue: another process's write lock is waited for without stopping the loop.
      save: (rate) => ctx.writes.run(() => ctx.repos.meta.setJson(RATE_KEY, rate)),
    },
  });
  const webhooks = new DeliveryWorker(ctx, logger, { timeoutMs: opts.webhookTimeoutMs });
  const externalChanges = new ExternalChanges(ctx);
  const chain = config.watchChain
    ? new ChainWatcher({
        ctx,
        logger,
        bitcoind: new Bitcoind(createRpcClient(config)),
        network: config.network,
        zmqEndpoint: config.zmqEndpoint || undefined,
        resyncIntervalMs: opts.chainResyncMs,
        onFatal: opts.onFatal,
      })
    : null;
  // Without a watcher nothing waits for a catch-up; with one, live invoices expire only after it.
  ctx.chain.caughtUp = chain === null;
  ctx.chain.watched = chain !== null;
  const startedAt = clock.now();
  const loops: Array<{ stop(): Promise<void> }> = [];
  let stopped = false;
  let lease: ReturnType<typeof acquireServerLease> | null = null;
  let dbThread: DbThread | null = null;
  let firstRefill: Promise<void> | null = null;
  let workStopped: Promise<void> | null = null;
  const stopController = new AbortController();

  /** Stops everything that reads or writes in the background (once): on stopping, or after a failed fdatasync. */
  function stopWork(): Promise<void> {
    // Together: a webhook in flight (up to its timeout) does not keep the chain watcher writing.
    workStopped ??= Promise.all([ctx.rates!.stop(), webhooks.stop(), chain?.stop(), ...loops.map((l) => l.stop()), firstRefill]).then(() => {});
    return workStopped;
  }

  async function refillAllPools(): Promise<void> {
    for (const x of ctx.repos.xpubs.listActive()) {
      if (workStopped) return;
      try {
        await refillAddressPool(ctx, x.id, undefined, () => workStopped !== null);
      } catch (err) {
        // One key's failure (an unreadable key text) leaves the others' pools filled.
        logger.error({ err, xpub_id: x.id }, 'address pool refill failed');
      }
    }
  }

  /** Two servers must never work on one data dir: the one that lost the lease stops its work, then the process. */
  function leaseLost(err: unknown): void {
    if (!(err instanceof LeaseLostError)) throw err;
    logger.fatal(err.message);
    stopWork().catch((error) => logger.error({ err: error }, 'stopping the background workers failed'));
    opts.onFatal?.(err.message);
  }

  return {
    ctx,
    logger,
    webhooks,
    chain,
    externalChanges,
    streamHeartbeatMs: opts.streamHeartbeatMs ?? 15_000,
    stopping: stopController.signal,
    beginStop() {
      stopController.abort();
    },
    health() {
      return healthReport({ ctx, clock, startedAt, chain, durabilityError });
    },
    startDbThread() {
      if (dbThread) return;
      dbThread = startDbThread(db, {
        busyTimeoutMs: config.busyTimeoutMs,
        now: () => clock.now(),
        onError: (err) => logger.error({ err }, 'database thread failed'),
        onRecovered: () => logger.warn('WAL checkpoints work again'),
      });
      ctx.writes.useThread(dbThread);
    },
    start() {
      // Throws when another server runs on this data dir: nothing has started yet then.
      lease = acquireServerLease(ctx);
      const held = lease;
      loops.push(startLoop('server-lease', LEASE_RENEW_MS, logger, () => ctx.writes.run(() => held.renew()).catch(leaseLost)));
      this.startDbThread();
      ctx.rates!.start();
      webhooks.start();
      chain?.start();
      loops.push(startLoop('expiry', opts.expiryIntervalMs ?? 1000, logger, () => expireDueInvoices(ctx)));
      loops.push(startListingInvoices(ctx, logger));
      // What it publishes reaches buyers: it reads once no commit waits for its fdatasync.
      loops.push(startLoop('external-changes', 1000, logger, () => ctx.writes.whenDurable(() => externalChanges.poll())));
      loops.push(startLoop('address-pool', 5000, logger, refillAllPools));
      // A key is fresh again at exactly 24 hours (checkIdempotency): purged from then on too.
      const purgeIdempotencyKeys = () => ctx.writes.run(() => ctx.repos.idempotency.purgeBefore(clock.now() - IDEMPOTENCY_TTL_MS + 1, 10_000));
      loops.push(startLoop('idempotency-purge', opts.idempotencyPurgeIntervalMs ?? 60_000, logger, purgeIdempotencyKeys));
      firstRefill = refillAllPools().catch((err) => logger.error({ err }, 'address pool refill failed'));
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      stopController.abort();
      await stopWork();
      // Last: the loops above may still have had outcomes to commit.
      ctx.writes.useThread(null);
      await dbThread?.stop();
      await ctx.writes.useWalSync(null);
      walSync?.close();
      try {
        lease?.release();
      } catch (err) {
        // The CLI holds the write lock: the next start on this host takes the lease over at once (its process is gone).
        logger.warn({ err: (err as Error).message }, 'the server lease could not be released');
      }
      db.close();
      logger.flush();
    },
  };
}

/**
 * A lost secret.key is found at start (refused: SecretKeyError), not at the
 * first delivery, which could sign nothing; another till's key, which opens
 * none of this one's secrets, is said where the operator looks after a restore.
 */
function checkSecretKey(ctx: Context, logger: Logger): void {
  ctx.secrets.load();
  const unreadable = listUnreadableSecrets(ctx);
  if (unreadable.length === 0) return;
  logger.warn(
    { secrets: unreadable.map((s) => s.endpointId ?? `${s.storeId} callback`) },
    `${unreadable.length} webhook signing secret(s) cannot be opened with secret.key: deliveries they sign fail until they are replaced (till webhooks rotate --unreadable)`,
  );
}
