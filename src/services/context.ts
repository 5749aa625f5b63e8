import type { Clock } from '../clock.ts';
import { ConfigError, publicBaseUrl, type Config } from '../config.ts';
import type { Db } from '../db/connection.ts';
import { createAddressPoolRepo } from '../db/address-pool.ts';
import { createChainBlocksRepo } from '../db/chain-blocks.ts';
import { createApiKeysRepo } from '../db/api-keys.ts';
import { createEventsRepo } from '../db/events.ts';
import { createIdempotencyRepo } from '../db/idempotency.ts';
import { createInvoicesRepo } from '../db/invoices.ts';
import { createMetaRepo } from '../db/meta.ts';
import { createPaymentSpendsRepo } from '../db/payment-spends.ts';
import { createStoresRepo } from '../db/stores.ts';
import { createWriteQueue, type WriteQueue } from '../db/write-queue.ts';
import { createXpubsRepo } from '../db/xpubs.ts';
import { createWebhookDeliveriesRepo } from '../db/webhook-deliveries.ts';
import { createWebhookEndpointsRepo } from '../db/webhook-endpoints.ts';
import { openSecretBox, type SecretBox } from '../auth/secret-box.ts';
import type { RateService } from '../rates/rate-service.ts';
import { InvoiceFeed } from './invoice-feed.ts';
import { refuseUpgradeUnderServer } from './server-lease.ts';
import { NewDeliveries } from '../webhooks/new-deliveries.ts';

/** What the chain watcher reports; invoice creation and expiry read it. */
export interface ChainState {
  /** False on a till that watches no chain (bitcoind.enabled = false, e.g. the demo): it makes test invoices only. */
  watched: boolean;
  connected: boolean;
  initialBlockDownload: boolean;
  /** False until the first catch-up after start has finished: no live invoice expires before. */
  caughtUp: boolean;
  tipHeight: number | null;
  /**
   * Counts blocks connected and disconnected. Each moves the confirmation
   * counts of older payments too, whose invoices are not published as changed.
   */
  blockChanges: number;
}

/** Everything a use case needs: the database with its repositories, the clock, the config, shared state. */
export interface Context {
  db: Db;
  clock: Clock;
  config: Config;
  repos: ReturnType<typeof createRepos>;
  /** Group-committed writes for the hot paths (invoice creation, transitions). */
  writes: WriteQueue;
  feed: InvoiceFeed;
  /** Receivers given new deliveries in this process, for the delivery worker's next wake. */
  newDeliveries: NewDeliveries;
  chain: ChainState;
  /** Set by the runtime; admin commands run without one. */
  rates: RateService | null;
  /** Where buyers reach Till: checkout links are built on it. */
  baseUrl: string;
  /** Seals webhook secrets at rest. */
  secrets: SecretBox;
}

function createRepos(db: Db) {
  return {
    stores: createStoresRepo(db),
    apiKeys: createApiKeysRepo(db),
    xpubs: createXpubsRepo(db),
    addressPool: createAddressPoolRepo(db),
    invoices: createInvoicesRepo(db),
    events: createEventsRepo(db),
    idempotency: createIdempotencyRepo(db),
    meta: createMetaRepo(db),
    webhookEndpoints: createWebhookEndpointsRepo(db),
    webhookDeliveries: createWebhookDeliveriesRepo(db),
    chainBlocks: createChainBlocksRepo(db),
    paymentSpends: createPaymentSpendsRepo(db),
  };
}

/**
 * A data directory serves one network: its keys, pooled addresses and chain
 * state mean nothing on another. The first use records it (a data dir from
 * before this check takes the network it is opened with); another is refused.
 */
function bindNetwork(repos: ReturnType<typeof createRepos>, config: Config): void {
  const held = repos.meta.get('network');
  if (held === null) repos.meta.set('network', config.network);
  else refuseOtherNetwork(held, config);
}

function refuseOtherNetwork(held: string | null, config: Config): void {
  if (held === null || held === config.network) return;
  throw new ConfigError(
    `${config.dataDir} holds a till for network "${held}" (its keys, addresses and chain state); Till is configured for "${config.network}". Use another data directory for ${config.network} (--data-dir), or set network back to ${held}.`,
  );
}

/**
 * What opening a data directory checks before upgrading its database (the
 * `beforeUpgrade` of openDatabase), so that a refusal leaves the file as it
 * was: a till of another network (refused right after the upgrade otherwise),
 * a server of the version before running on it.
 */
export function checksBeforeUpgrade(config: Config, now: () => number): (db: Db) => void {
  const underServer = refuseUpgradeUnderServer(config.dataDir, now);
  return (db) => {
    refuseOtherNetwork(createMetaRepo(db).get('network'), config);
    underServer(db);
  };
}

export interface ContextOptions {
  /**
   * Lets the secret box make a new secret.key though sealed secrets need the
   * lost one: only for the command that then replaces those secrets.
   */
  replaceLostSecretKey?: boolean;
}

export function createContext(db: Db, clock: Clock, config: Config, opts: ContextOptions = {}): Context {
  const repos = createRepos(db);
  bindNetwork(repos, config);
  return {
    db,
    clock,
    config,
    repos,
    writes: createWriteQueue(db),
    feed: new InvoiceFeed(),
    newDeliveries: new NewDeliveries(),
    chain: { watched: false, connected: false, initialBlockDownload: false, caughtUp: false, tipHeight: null, blockChanges: 0 },
    rates: null,
    baseUrl: publicBaseUrl(config),
    secrets: openSecretBox(config.dataDir, { sealedSecrets: opts.replaceLostSecretKey ? undefined : () => repos.webhookEndpoints.listSecretsInUse().length }),
  };
}
