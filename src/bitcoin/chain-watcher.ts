import { Transaction, type Block } from 'bitcoinjs-lib';
import type { Network } from '../config.ts';
import type { StoredInvoice } from '../db/invoices.ts';
import type { Logger } from '../log.ts';
import type { ChainBlock } from '../db/chain-blocks.ts';
import { watchUntil } from '../domain/invoice-state.ts';
import { applyBlock, applyChainChange, applyMempoolTx, loadWatchSet, matchOutputs, prevHashOf, readBlock, reconcileMempool, recordBlockSeen, scannedBlockFacts, settleWatchEnds, spentOutpoints, trackedMempoolTxids, type BlockFacts, type BlockHeader } from '../services/chain-payments.ts';
import type { Context } from '../services/context.ts';
import { RPC_HEIGHT_OUT_OF_RANGE, RPC_PRUNED_OR_MISC, type Bitcoind, type ChainInfo } from './bitcoind.ts';
import { CHAIN_NAMES } from './node-connection.ts';
import { RpcError, RpcUnavailableError } from './rpc-client.ts';
import { WatchSet } from './watch-set.ts';
import { ZmqFeed } from './zmq-feed.ts';

// ZMQ is the wake-up, JSON-RPC the truth. Every notification, sequence gap,
// reconnect, restart and a 30 s timer leads to the same re-sync: from the last
// processed block to the node's tip over RPC (rolling back to the fork point
// first), then the mempool check. A full re-sync (start, gap, reconnect) reads
// the whole mempool before the blocks. All chain work runs one piece at a time.

export interface ChainHealth {
  status: 'connecting' | 'syncing' | 'synced' | 'disconnected' | 'fatal';
  error: string | null;
  tip_height: number | null;
  initial_block_download: boolean;
  zmq: 'connected' | 'disconnected' | 'unavailable';
  pruned: boolean;
  pruned_fallback: string | null;
  watched_addresses: number;
  last_sync_at: string | null;
  /** Completed re-syncs since start. */
  syncs: number;
}

export interface ChainWatcherOptions {
  ctx: Context;
  logger: Logger;
  bitcoind: Bitcoind;
  network: Network;
  /** tcp://… for all topics; when empty, asked of bitcoind (getzmqnotifications). */
  zmqEndpoint?: string;
  resyncIntervalMs?: number;
  /** Called once when the node is on another network: nothing is safe to do then. */
  onFatal?: (message: string) => void;
}

const MAX_BACKOFF_MS = 30_000;
/** A feed that read this long before failing was sound: its failure starts the pauses again (a quiet chain passes nothing on for hours). */
const FEED_SOUND_MS = 60_000;
export const DEFAULT_RESYNC_MS = 30_000;
/** How long a new ZMQ feed may take to connect before its absence is worth a warning. */
const FEED_CONNECT_MS = 10_000;
const MEMPOOL_FETCH_BATCH = 500;
/**
 * New-branch blocks past the old tip undone and redone in the same change: a
 * reorged-out payment is usually mined again within a few blocks, and then
 * never counted as lost.
 */
const REORG_SPAN = 6;
/** Syncs in a row that may start over at once: more is a node contradicting itself (retried after pauses). */
const START_OVER_LIMIT = 5;

export class ChainWatcher {
  readonly #o: Required<Omit<ChainWatcherOptions, 'zmqEndpoint' | 'onFatal'>> & Pick<ChainWatcherOptions, 'zmqEndpoint' | 'onFatal'>;
  readonly #ctx: Context;
  readonly #log: Logger;
  #watch: WatchSet | null = null;
  #feed: ZmqFeed | null = null;
  #zmqAvailable = true;
  /** Whether ZMQ brings new transactions (rawtx); without, each sync polls the mempool for them. */
  #zmqTxs = true;
  /** The mempool's txids at the last look, while it is polled (no ZMQ): each poll fetches only the new ones. */
  #mempoolSeen: Set<string> | null = null;
  /** Syncs in a row that started over (the chain moved under them), since the last one that finished. */
  #startOvers = 0;
  /** Said that bitcoind is behind: once until it is not, not at every sync. */
  #behindNoted = false;
  /** Said once that the mempool is read at each sync because the ZMQ feed is not connected. */
  #feedDownNoted = false;
  #health: ChainHealth = { status: 'connecting', error: null, tip_height: null, initial_block_download: false, zmq: 'disconnected', pruned: false, pruned_fallback: null, watched_addresses: 0, last_sync_at: null, syncs: 0 };
  #running = false;
  #syncing: Promise<void> | null = null;
  #again: { full: boolean } | null = null;
  /** The last sync ended because the chain moved under it (reset by one that ends otherwise, failures aside). */
  #movedLastSync = false;
  #timer: NodeJS.Timeout | null = null;
  #retry: NodeJS.Timeout | null = null;
  #backoffMs = 1000;
  /** Feeds in a row that failed before passing on any message or reading for FEED_SOUND_MS, and the pause before the next one. */
  #feedFailures = 0;
  #feedStartedAt = 0;
  #feedRetry: NodeJS.Timeout | null = null;
  #unsubscribe: (() => void) | null = null;
  #lastPrune = 0;

  constructor(opts: ChainWatcherOptions) {
    // `?? ` and not a spread default: the runtime passes an explicit undefined.
    this.#o = { ...opts, resyncIntervalMs: opts.resyncIntervalMs ?? DEFAULT_RESYNC_MS };
    this.#ctx = opts.ctx;
    this.#log = opts.logger;
  }

  health(): ChainHealth {
    return { ...this.#health, zmq: !this.#zmqAvailable ? 'unavailable' : this.#feed?.connected ? 'connected' : 'disconnected', watched_addresses: this.#watch?.size ?? 0 };
  }

  start(): void {
    this.#running = true;
    // How far Till has read, from its last run: known before the node answers (it may not, for a while).
    this.#health = { ...this.#health, tip_height: this.#ctx.repos.chainBlocks.tip()?.height ?? null };
    this.#timer = setInterval(() => this.requestSync(false, 'timer'), this.#o.resyncIntervalMs);
    this.#timer.unref();
    // New invoices (and changes from elsewhere) join the watch set as they are committed.
    this.#unsubscribe = this.#ctx.feed.subscribeAll((inv) => this.#watchInvoice(inv));
    this.requestSync(true, 'start');
  }

  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#retry) clearTimeout(this.#retry);
    if (this.#feedRetry) clearTimeout(this.#feedRetry);
    this.#unsubscribe?.();
    this.#feed?.stop();
    this.#o.bitcoind.rpc.abortCalls();
    await this.#syncing;
  }

  /**
   * Asks for a re-sync and resolves when one that began after the request has
   * finished. Requests while one runs are folded into one more run after it.
   */
  requestSync(full: boolean, reason: string): Promise<void> {
    if (!this.#running) return Promise.resolve();
    if (this.#syncing) {
      this.#again = { full: full || (this.#again?.full ?? false) };
      // The running sync's finally starts the queued one: wait for that one too.
      return this.#syncing.then(() => this.#syncing ?? undefined);
    }
    this.#log.debug({ reason, full }, 'chain re-sync');
    this.#syncing = this.#sync(full).finally(() => {
      this.#syncing = null;
      const again = this.#again;
      this.#again = null;
      if (again) void this.requestSync(again.full, 'queued');
    });
    return this.#syncing;
  }

  /** Waits until no sync is running or queued (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.#syncing) await this.#syncing;
  }

  #watchInvoice(inv: StoredInvoice): void {
    if (!this.#watch) return;
    // A watch may end before the last prune (a store without a late window, paid long before its payment
    // is deep enough to let go): the prunes look only at watches ending since the last one.
    const until = watchUntil(inv);
    if (until !== null && until <= this.#lastPrune) this.#watch.delete(inv.scriptHex, inv.rowid);
    else this.#reportSharedAddress(inv, this.#watch.add(inv.scriptHex, inv.rowid));
  }

  /** No unique index stops an address handed out twice (migration 0013): this says it loudly if it ever happens. */
  #reportSharedAddress(inv: StoredInvoice, otherRowid: number): void {
    const other = otherRowid ? this.#ctx.repos.invoices.getByRowid(otherRowid) : null;
    if (other?.scriptHex !== inv.scriptHex) return;
    this.#log.error(
      { invoice_id: inv.id, other_invoice_id: other.id, address: inv.address, xpubs: [inv.xpubId, other.xpubId] },
      `invoices ${inv.id} and ${other.id} have the same address ${inv.address}: a payment to it counts for both. Till hands out each address once, so this is a bug: report it, and check both invoices' payments by hand`,
    );
  }

  /**
   * As of how far Till has read the chain, not of now: an invoice whose watch
   * ended while Till was down is still watched in the blocks it missed (the
   * prune after the catch-up lets it go).
   */
  #buildWatchSet(): void {
    const now = this.#ctx.clock.now();
    const asOf = Math.min(now, this.#ctx.repos.chainBlocks.readUpTo() ?? now);
    settleWatchEnds(this.#ctx);
    this.#watch = loadWatchSet(this.#ctx, asOf, (rowid, other) => {
      const inv = this.#ctx.repos.invoices.getByRowid(rowid);
      if (inv) this.#reportSharedAddress(inv, other);
    });
    this.#lastPrune = asOf;
  }

  #pruneWatchSet(): void {
    const now = this.#ctx.clock.now();
    for (const { rowid, scriptHex } of this.#ctx.repos.invoices.listUnwatchedBetween(this.#lastPrune, now)) {
      this.#watch!.delete(scriptHex, rowid);
    }
    this.#lastPrune = now;
  }

  async #sync(full: boolean): Promise<void> {
    const { bitcoind } = this.#o;
    try {
      const info = await bitcoind.getChainInfo();
      if (!CHAIN_NAMES[this.#o.network].includes(info.chain)) {
        const message = `bitcoind is on chain "${info.chain}" but Till is configured for network "${this.#o.network}": refusing to watch the wrong chain. Fix the network setting or point Till at the right node.`;
        this.#health = { ...this.#health, status: 'fatal', error: message };
        this.#running = false;
        this.#log.fatal({ chain: info.chain, network: this.#o.network }, message);
        this.#o.onFatal?.(message);
        return;
      }
      this.#ctx.chain.connected = true;
      this.#ctx.chain.initialBlockDownload = info.initialBlockDownload;
      // A routine re-sync (each block, the timer) of a till that is in step stays 'synced': /healthz must not flap.
      const status = this.#health.status === 'synced' ? 'synced' : 'syncing';
      this.#health = { ...this.#health, status, error: null, initial_block_download: info.initialBlockDownload, pruned: info.pruned };
      if (!this.#watch) this.#buildWatchSet();
      await this.#startFeed();
      // Before the blocks: an on-time payment still unmined makes an invoice wait, so the
      // blocks mined while Till was away must not be judged without it (a late one in them would expire it).
      if (full) await this.#scanMempool();
      // Without ZMQ (or while its feed is not connected) nothing tells of a new transaction: each sync looks for them.
      else if (this.#pollsMempool()) await this.#scanMempool(true);
      const behind = await this.#nodeBehind(info);
      if (behind) {
        // Nothing rolled back: the blocks Till read are still the most work the node knows of.
        this.#ctx.chain.caughtUp = false;
        this.#health = { ...this.#health, status: 'syncing', error: behind };
        if (!this.#behindNoted) this.#log.warn(behind);
        this.#behindNoted = true;
        return;
      }
      this.#behindNoted = false;
      // Cut short (the chain moved under it): the queued re-sync finishes the work; until then Till has not caught up.
      if (!(await this.#catchUpBlocks(info.blocks))) {
        this.#ctx.chain.caughtUp = false;
        this.#movedLastSync = false;
        return;
      }
      // Only now: the blocks just read may pay invoices whose watch ended since the last prune.
      this.#pruneWatchSet();
      // Caught up before the mempool check: every block is read, so what it finds lost is judged as a running
      // Till judges it (an invoice that waited for a payment now gone expires now, and its late window opens now).
      // Not while the node is in initial block download: the blocks it has not yet may pay invoices on time.
      this.#ctx.chain.caughtUp = !info.initialBlockDownload;
      await this.#checkTrackedMempool();
      this.#ctx.chain.tipHeight = this.#ctx.repos.chainBlocks.tip()?.height ?? info.blocks;
      this.#movedLastSync = false;
      this.#startOvers = 0;
      // Pauses grow until a sync finishes: a node that answers but not in a way that holds together is no quicker to retry.
      this.#backoffMs = 1000;
      this.#health = { ...this.#health, status: 'synced', tip_height: this.#ctx.chain.tipHeight, last_sync_at: new Date(this.#ctx.clock.now()).toISOString(), syncs: this.#health.syncs + 1 };
    } catch (err) {
      // Stopping: the calls under way were aborted on purpose.
      if (!this.#running) return;
      // A block asked for left the node's best chain as the sync read it (a reorg, invalidateblock): no fault,
      // the queued re-sync starts over at once. Twice in a row is not that: the backoff below.
      const moved = isChainMovedError(err) && !this.#movedLastSync;
      this.#movedLastSync = moved;
      if (moved) {
        this.#ctx.chain.caughtUp = false;
        this.#startOver();
        this.#log.info({ err: (err as Error).message }, 'the chain moved during the sync; starting over');
        return;
      }
      const unavailable = err instanceof RpcUnavailableError;
      this.#ctx.chain.connected = !unavailable && this.#ctx.chain.connected;
      // What the chain holds is unknown until a sync succeeds: live invoices do not expire meanwhile (a payment made on time may be in it).
      this.#ctx.chain.caughtUp = false;
      // Not caught up until a sync succeeds: 'syncing' (again) with the error.
      this.#health = { ...this.#health, status: unavailable ? 'disconnected' : 'syncing', error: (err as Error).message };
      this.#log[unavailable ? 'warn' : 'error']({ err: (err as Error).message }, 'chain sync failed; retrying');
      this.#retryLater();
    }
  }

  /** A full re-sync after the current pause, which doubles up to 30 s: whatever was missed while failing is found. */
  #retryLater(): void {
    if (!this.#running || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.requestSync(true, 'retry');
    }, this.#backoffMs);
    this.#retry.unref();
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS);
  }

  /** Whether each sync reads the mempool for new transactions: ZMQ brings none (no rawtx, or a feed not connected). */
  #pollsMempool(): boolean {
    const polls = !this.#zmqTxs || !this.#feed?.connected;
    // Said once it lasts: a new feed takes a moment to connect.
    const down = polls && this.#zmqTxs && this.#ctx.clock.now() - this.#feedStartedAt >= FEED_CONNECT_MS;
    if (down && !this.#feedDownNoted) this.#log.warn('the ZMQ feed is not connected: reading the mempool at each sync (every 30 s) until it is');
    this.#feedDownNoted = down;
    return polls;
  }

  async #startFeed(): Promise<void> {
    if (this.#feedRetry) return;
    if (this.#feed) {
      // Not connected, it may follow endpoints bitcoind no longer publishes on (restarted with others, or none): asked
      // again, a new feed follows the new ones. Set by hand (zmq_endpoint), they are Till's to keep.
      if (this.#feed.connected || this.#o.zmqEndpoint) return;
      const found = await this.#o.bitcoind.getZmqEndpoints();
      const endpoints = [found.sequence, found.rawtx, found.hashblock].filter((e): e is string => Boolean(e));
      if (sameEndpoints(endpoints, this.#feed.endpoints)) return;
      this.#log.info({ endpoints }, 'bitcoind publishes ZMQ notifications elsewhere now: following them');
      this.#feed.stop();
      this.#feed = null;
    }
    let endpoints: string[];
    if (this.#o.zmqEndpoint) endpoints = [this.#o.zmqEndpoint];
    else {
      // Asked at every sync until found: a bitcoind restarted with -zmqpub… is followed without restarting Till.
      const found = await this.#o.bitcoind.getZmqEndpoints();
      endpoints = [found.sequence, found.rawtx, found.hashblock].filter((e): e is string => Boolean(e));
      if (endpoints.length === 0) {
        if (this.#zmqAvailable) this.#log.warn('bitcoind publishes no ZMQ notifications (-zmqpubsequence, -zmqpubrawtx, -zmqpubhashblock): polling its blocks and mempool every 30 s instead');
        this.#zmqAvailable = false;
        this.#zmqTxs = false;
        return;
      }
      if (!this.#zmqAvailable) this.#log.info('bitcoind publishes ZMQ notifications now: following them');
      this.#zmqAvailable = true;
      this.#zmqTxs = Boolean(found.rawtx);
      if (!this.#zmqTxs) this.#log.warn('bitcoind publishes no rawtx over ZMQ (-zmqpubrawtx): its mempool is polled every 30 s for new payments instead');
    }
    this.#feed = new ZmqFeed({
      endpoints,
      handlers: {
        rawtx: (raw) => this.#onRawTx(raw),
        hashblock: () => void this.requestSync(false, 'hashblock'),
        sequence: (_hash, label) => {
          if (label !== 'A') void this.requestSync(false, `sequence ${label}`);
        },
        resync: (reason) => void this.requestSync(true, reason),
        malformed: (topic, reason) => this.#log.warn({ topic, reason }, 'malformed ZMQ message ignored'),
        failed: (reason, delivered) => {
          // Till would hear of no new transaction until the next block: a new feed, and a re-sync for what was missed.
          // At once the first time; a socket that fails again before passing on anything is a fault of its own,
          // retried after growing pauses rather than in a loop of full re-syncs.
          if (delivered || this.#ctx.clock.now() - this.#feedStartedAt >= FEED_SOUND_MS) this.#feedFailures = 0;
          const pauseMs = this.#feedFailures === 0 ? 0 : Math.min(1000 * 2 ** (this.#feedFailures - 1), MAX_BACKOFF_MS);
          this.#feedFailures++;
          this.#log.error({ reason, retry_in_ms: pauseMs }, 'ZMQ feed stopped reading; starting a new one');
          this.#feed = null;
          this.#feedRetry = setTimeout(() => {
            this.#feedRetry = null;
            void this.requestSync(true, 'zmq feed failed');
          }, pauseMs);
          this.#feedRetry.unref();
        },
      },
    });
    this.#feedStartedAt = this.#ctx.clock.now();
    await this.#feed.start();
  }

  #onRawTx(raw: Buffer): void {
    if (!this.#watch) return;
    let tx: Transaction;
    try {
      tx = Transaction.fromBuffer(raw);
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'malformed rawtx ignored');
      return;
    }
    if (matchOutputs(this.#ctx, this.#watch, tx).length === 0) return;
    void this.#applyIfHeld(tx, this.#ctx.clock.now());
  }

  /**
   * A transaction ZMQ brought that pays an invoice counts once the node's RPC
   * says its mempool holds it: whoever can bind the ZMQ port (while bitcoind is
   * down, say) could publish one it never had. Not there (mined meanwhile: its
   * block brings it; or never the node's), it is left alone.
   */
  async #applyIfHeld(tx: Transaction, seenAt: number): Promise<void> {
    try {
      const held = await this.#o.bitcoind.inMempool([tx.getId()]);
      if (!held.has(tx.getId()) || !this.#running || !this.#watch) return;
      this.#publish(applyMempoolTx(this.#ctx, this.#watch, tx, seenAt));
    } catch (err) {
      if (!this.#running) return;
      this.#log.error({ err }, 'could not record a mempool payment; the next re-sync retries');
      void this.requestSync(true, 'mempool apply failed');
    }
  }

  #publish(changed: StoredInvoice[]): void {
    for (const inv of changed) this.#ctx.feed.publish(inv);
  }

  /**
   * Why the node is behind the blocks Till has read, or null: its best chain
   * is lower and has less work than Till's tip (unknown to it, or known only
   * as a header it has not connected: a node restarted from an older state,
   * a restored datadir), or it is in initial block download. Such a chain is
   * no reorg: Till waits for the node instead of rolling back (and telling
   * merchants their payments left the chain).
   */
  async #nodeBehind(info: ChainInfo): Promise<string | null> {
    const tip = this.#ctx.repos.chainBlocks.tip();
    if (!tip || info.blocks >= tip.height) return null;
    if (!info.initialBlockDownload) {
      const work = await this.#o.bitcoind.getBlockChainwork(tip.hash);
      if (work !== null && work <= info.chainwork) return null;
    }
    return `bitcoind's best chain (height ${info.blocks}) is behind the blocks Till has read (height ${tip.height})${info.initialBlockDownload ? ', in initial block download' : ''}: waiting for it to catch up`;
  }

  /** Connects the node's blocks up to nodeHeight; false when cut short by a reorg under way (a re-sync is queued). */
  async #catchUpBlocks(nodeHeight: number): Promise<boolean> {
    const ctx = this.#ctx;
    const { bitcoind } = this.#o;
    const tip = ctx.repos.chainBlocks.tip();
    if (!tip) {
      // First start: payments before now belong to no invoice; begin at the node's tip.
      const hash = await bitcoind.getBlockHash(nodeHeight);
      const header = await bitcoind.getBlockHeader(hash);
      recordBlockSeen(ctx, { height: nodeHeight, hash, prevHash: header.prevHash });
      return true;
    }
    const next = await this.#followReorg(tip, nodeHeight);
    if (next === null) return false;
    for (let height = next; height <= nodeHeight && this.#running; height++) {
      const block = await this.#getBlockUnlessPruned(height);
      if (block === null) {
        // Pruned: the rest up to the node's tip is one change, read from headers and the UTXO set.
        const stretch = await this.#readPrunedStretch(height, nodeHeight, ctx.repos.chainBlocks.get(height - 1)?.hash ?? null);
        if (stretch === null) return false;
        this.#publish(applyChainChange(ctx, { disconnected: [], connected: stretch }, ctx.clock.now()));
        return true;
      }
      if (!this.#extendsStoredTip(block, height)) return false;
      this.#publish(applyBlock(ctx, this.#watch!, block, height, ctx.clock.now()));
    }
    return true;
  }

  /** The best chain's block at `height`; null when the node has pruned it. */
  async #getBlockUnlessPruned(height: number): Promise<Block | null> {
    const { bitcoind } = this.#o;
    try {
      return await bitcoind.getBlock(await bitcoind.getBlockHash(height));
    } catch (err) {
      if (isPrunedError(err)) return null;
      throw err;
    }
  }

  /** Whether a block fetched for `height` builds on the block stored below it; if not, a re-sync starts over. */
  #extendsStoredTip(block: Block, height: number): boolean {
    const below = this.#ctx.repos.chainBlocks.get(height - 1);
    // No block below: a reorg deeper than the blocks kept starts the new branch at the lowest one.
    if (!below || prevHashOf(block) === below.hash) return true;
    this.#startOver();
    return false;
  }

  /**
   * The chain moved under the sync: a re-sync is queued to start over from the
   * fork point, keeping a full one asked for meanwhile. Many in a row are no
   * chain moving but a node whose answers do not hold together (blocks that do
   * not follow each other): an error, retried after growing pauses, not a loop.
   */
  #startOver(): void {
    if (++this.#startOvers <= START_OVER_LIMIT) {
      this.#again = { full: this.#again?.full ?? false };
      return;
    }
    const message = `bitcoind's answers did not hold together in ${this.#startOvers} syncs in a row (blocks that do not follow each other): retrying after a pause`;
    this.#health = { ...this.#health, status: 'syncing', error: message };
    this.#log.error(message);
    this.#retryLater();
  }

  /**
   * Stored blocks the node no longer has on its best chain (a reorg) are
   * undone together with the new branch's blocks up to REORG_SPAN past the old
   * tip, in one chain change. Returns the next height to connect; null when
   * the chain moved while reading it (a re-sync is queued) or Till is stopping.
   */
  async #followReorg(tip: ChainBlock, nodeHeight: number): Promise<number | null> {
    const ctx = this.#ctx;
    const { bitcoind } = this.#o;
    const stale: ChainBlock[] = [];
    for (let b: ChainBlock | null = tip; b; b = ctx.repos.chainBlocks.get(b.height - 1)) {
      if (b.height <= nodeHeight && (await bitcoind.getBlockHash(b.height)) === b.hash) break;
      stale.push(b);
    }
    if (stale.length === 0) return tip.height + 1;
    const lowest = stale.at(-1)!;
    const kept = ctx.repos.chainBlocks.get(lowest.height - 1);
    // Deeper than the blocks Till keeps: the new branch is read from the lowest one kept.
    this.#log.warn({ from: lowest.height, to: tip.height, deeper_than_kept: kept === null }, 'blocks left the best chain; rolling back');
    // The new branch is matched against the stale blocks' invoices too, watched or not: a payment it mines again is found.
    const staleInvoices = stale.flatMap((b) => ctx.repos.invoices.listWithPaymentsInBlock(b.hash));
    for (const inv of staleInvoices) this.#watch!.add(inv.scriptHex, inv.rowid);
    const connected: BlockFacts[] = [];
    const doubleSpends = new DoubleSpendFinder(ctx, stale, staleInvoices);
    let prevHash = kept?.hash ?? null;
    for (let height = lowest.height; height <= Math.min(nodeHeight, tip.height + REORG_SPAN); height++) {
      const block = await this.#getBlockUnlessPruned(height);
      if (block === null) {
        // Pruned: the rest of the new branch joins the same change, so a payment it mines again never looks lost.
        const stretch = await this.#readPrunedStretch(height, nodeHeight, prevHash, staleInvoices.map((inv) => inv.address));
        if (stretch === null) return null;
        connected.push(...stretch);
        break;
      }
      // Stopping: nothing of the reorg is written; the next start finds it again.
      if (!this.#running) return null;
      const facts = readBlock(ctx, this.#watch!, block, height);
      if (prevHash !== null && facts.prevHash !== prevHash) {
        this.#startOver();
        return null;
      }
      connected.push(facts);
      doubleSpends.read(block);
      prevHash = facts.hash;
    }
    // Only in step with the node: while catching up an invoice cannot expire on this change (blocks are unread),
    // so its loss is left to the mempool check after the blocks, which judges it as of then (waited, then expired).
    const gone = ctx.chain.caughtUp ? doubleSpends.found : undefined;
    this.#publish(applyChainChange(ctx, { disconnected: stale, connected, gone }, ctx.clock.now()));
    return (connected.at(-1)?.height ?? lowest.height - 1) + 1;
  }

  /**
   * Block `fromHeight` is pruned on the node: the blocks from it to the
   * node's tip are read from their headers, and the payments they made from
   * the UTXO set (scantxoutset) for every watched address and `alsoAddresses`.
   * Null when the headers do not follow `prevHash` and each other (the chain
   * moved: a re-sync is queued) or Till is stopping.
   */
  async #readPrunedStretch(fromHeight: number, nodeHeight: number, prevHash: string | null, alsoAddresses: string[] = []): Promise<BlockFacts[] | null> {
    const ctx = this.#ctx;
    const { bitcoind } = this.#o;
    const message = `block ${fromHeight} is pruned on the node; confirmed payments were looked up in the UTXO set (scantxoutset) instead. Outputs already spent again cannot be seen that way: keep the node's prune depth above Till's downtime.`;
    this.#health = { ...this.#health, pruned_fallback: message };
    this.#log.warn(message);
    const headers: BlockHeader[] = [];
    for (let height = fromHeight; height <= nodeHeight; height++) {
      const hash = await bitcoind.getBlockHash(height);
      const header = await bitcoind.getBlockHeader(hash);
      const below = headers.at(-1)?.hash ?? prevHash;
      if (below !== null && header.prevHash !== below) {
        this.#startOver();
        return null;
      }
      headers.push({ height, hash, prevHash: header.prevHash, time: header.time * 1000 });
    }
    const addresses = [...new Set([...ctx.repos.invoices.listWatchedAddresses(this.#lastPrune), ...alsoAddresses])];
    const unspents = addresses.length === 0 ? [] : await bitcoind.scanAddresses(addresses);
    if (!this.#running) return null;
    return scannedBlockFacts(ctx, this.#watch!, headers, unspents);
  }

  /**
   * Full mempool pass after a start, a gap or a reconnect: anything missed is
   * found. What is gone is marked by the tracked check after the blocks (a
   * payment missing from the mempool now may be in one of them). `onlyNew`:
   * only the transactions that entered it since the last look (polling, when
   * ZMQ brings no rawtx).
   */
  async #scanMempool(onlyNew = false): Promise<void> {
    const times = await this.#o.bitcoind.getRawMempoolTimes();
    const seen = onlyNew ? this.#mempoolSeen : null;
    await this.#readMempoolTxs([...times.keys()].filter((txid) => !seen?.has(txid)), times);
    // Kept only while polling: with ZMQ every new transaction arrives by itself.
    this.#mempoolSeen = !this.#pollsMempool() || !this.#running ? null : new Set(times.keys());
  }

  /** After the blocks of every re-sync: are the unconfirmed payments Till tracks still in the mempool? */
  async #checkTrackedMempool(): Promise<void> {
    const tracked = trackedMempoolTxids(this.#ctx);
    if (tracked.length === 0) return;
    const present = await this.#o.bitcoind.inMempool(tracked);
    const gone = tracked.filter((txid) => !present.has(txid));
    if (gone.length === 0) return;
    await this.#readReplacements(gone);
    // Only what was asked about can be missing: a payment recorded while the answer came was not.
    const asked = new Set(tracked);
    if (await this.#mayReconcile()) this.#publish(reconcileMempool(this.#ctx, (txid) => !asked.has(txid) || present.has(txid)));
  }

  /**
   * The mempool transactions that replaced these, read before they are marked
   * replaced: a fee bump whose rawtx was lost, or is still on its way behind
   * the removal that started this re-sync, is judged as a bump (as on time as
   * what it replaced), not as a payment lost and new money after it.
   */
  async #readReplacements(gone: string[]): Promise<void> {
    const { bitcoind } = this.#o;
    const spenders = await bitcoind.mempoolSpenders(this.#ctx.repos.paymentSpends.spentBy(gone));
    if (spenders.size === 0 || !this.#running) return;
    // First seen when the node took it (found minutes later, it may still be on time).
    const times = await bitcoind.inMempool([...spenders]);
    await this.#readMempoolTxs([...times.keys()], times);
  }

  /**
   * Reads these mempool transactions in batches and records the payments among
   * them, each first seen when the node took it (`entered`; never after now).
   */
  async #readMempoolTxs(txids: string[], entered: ReadonlyMap<string, number>): Promise<void> {
    for (let i = 0; i < txids.length && this.#running; i += MEMPOOL_FETCH_BATCH) {
      for (const tx of await this.#o.bitcoind.getRawTransactions(txids.slice(i, i + MEMPOOL_FETCH_BATCH))) {
        this.#publish(applyMempoolTx(this.#ctx, this.#watch!, tx, Math.min(this.#ctx.clock.now(), entered.get(tx.getId()) ?? Infinity)));
      }
    }
  }

  /**
   * Whether the tracked payments missing from the mempool answer just read may be marked
   * replaced: only if the node's best block is still the one Till read up to,
   * so that none of them was mined since. Otherwise a re-sync is queued, which
   * reads the new blocks first.
   */
  async #mayReconcile(): Promise<boolean> {
    const { bestBlockHash } = await this.#o.bitcoind.getChainInfo();
    if (bestBlockHash === this.#ctx.repos.chainBlocks.tip()?.hash) return true;
    this.#startOver();
    return false;
  }
}

/**
 * The stale blocks' payments that a new-branch block double-spends: one of its
 * transactions spends what a payment's transaction spent (payment_spends). Only
 * that is proof of a loss: a payment the node did not take back into its
 * mempool (a full mempool, its own policy) may still be mined, and is left to
 * the mempool check after the blocks.
 */
class DoubleSpendFinder {
  readonly found = new Set<string>();
  readonly #payerOf = new Map<string, string>();

  constructor(ctx: Context, stale: readonly ChainBlock[], staleInvoices: readonly StoredInvoice[]) {
    const staleHashes = new Set(stale.map((b) => b.hash));
    const txids = new Set(staleInvoices.flatMap((inv) => inv.payments.filter((p) => staleHashes.has(p.blockHash ?? '')).map((p) => p.txid)));
    for (const txid of txids) for (const outpoint of ctx.repos.paymentSpends.spentBy([txid])) this.#payerOf.set(outpoint, txid);
  }

  read(block: Block): void {
    if (this.#payerOf.size === 0) return;
    for (const tx of block.transactions ?? []) {
      for (const outpoint of spentOutpoints(tx)) {
        const payer = this.#payerOf.get(outpoint);
        // The payment's own transaction, mined again, spends them too.
        if (payer !== undefined && tx.getId() !== payer) this.found.add(payer);
      }
    }
  }
}

function sameEndpoints(a: readonly string[], b: readonly string[]): boolean {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((e) => set.has(e));
}

/**
 * A height above the node's tip: the chain got shorter between two calls (a
 * reorg, invalidateblock). A block hash that left the best chain is still
 * answered (Core keeps stale blocks), so that is no such error.
 */
function isChainMovedError(err: unknown): boolean {
  return err instanceof RpcError && err.code === RPC_HEIGHT_OUT_OF_RANGE && /height out of range/i.test(err.message);
}

/** Core's answer for a block it has pruned away. */
function isPrunedError(err: unknown): boolean {
  return err instanceof RpcError && err.code === RPC_PRUNED_OR_MISC && /prun/i.test(err.message);
}
