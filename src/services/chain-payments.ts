import type { Block, Transaction } from 'bitcoinjs-lib';
import type { UnspentOutput } from '../bitcoin/bitcoind.ts';
import { WatchSet } from '../bitcoin/watch-set.ts';
import type { StoredInvoice } from '../db/invoices.ts';
import type { Payment } from '../domain/invoice.ts';
import { COINBASE_MATURITY, confirmationsNeeded, isCounting } from '../domain/invoice-amounts.ts';
import { joinUntil, outpointKey, REPLACED_MAY_BE_MINED_MS, transition, watchUntil, type Fact } from '../domain/invoice-state.ts';
import { isSimulatedPayment } from '../domain/synthetic-payment.ts';
import type { Context } from './context.ts';
import { saveTransition } from './invoices.ts';

// What the chain tells about invoices, applied through the same state machine
// as every other change. Each function is one transaction: a move of the best
// chain (blocks connected, a reorg, a pruned stretch), a mempool transaction,
// a mempool check. A crash replays the whole unit, never half of it.

/**
 * One unit of the chain's writes. They go around the write queue (each
 * FULL-synced on its own, docs/DECISIONS.md) but stop with it: after a failed
 * fdatasync, a sync that was under way writes nothing more.
 */
function writeChainChange<T>(ctx: Context, change: () => T): T {
  ctx.writes.assertWritable();
  return ctx.db.transaction(change).immediate();
}

/** A block taken as seen without reading it: the first start's tip. */
export function recordBlockSeen(ctx: Context, block: { height: number; hash: string; prevHash: string }): void {
  writeChainChange(ctx, () => ctx.repos.chainBlocks.insert(block, ctx.clock.now()));
}

/** Confirmation counts are kept current for payments this many blocks deep (below the block a change starts at). */
export const CONFIRMATION_TRACKING_DEPTH = 1000;
/**
 * Invoices with payments this close to the tip (below the block a change starts at) are re-evaluated on every
 * change; with a coinbase payment, COINBASE_MATURITY close (it is confirmed at 100 confirmations).
 */
const STATE_DEPTH = 7;
const BLOCKS_KEPT = 1000;

/**
 * Gives invoices the watch end today's rules give them, where an older Till
 * wrote another; once per data dir for each change of rule (each reads many
 * rows): every write since sets it.
 * - An upgrade from schema 2 gave every invoice the "while needed" sentinel:
 *   a finished one would otherwise stay in the watch set for good.
 * - Before a replaced payment kept its invoice watched (REPLACED_MAY_BE_MINED_MS),
 *   the ends were shorter: one mined after all would not be found.
 */
export function settleWatchEnds(ctx: Context): void {
  settleWatchEndsOnce(ctx, WATCH_ENDS_SETTLED, () => ctx.repos.invoices.listFinishedWatchedWhileNeeded());
  settleWatchEndsOnce(ctx, REPLACED_WATCH_ENDS_SETTLED, () => ctx.repos.invoices.listFinishedWithReplacedSince(ctx.clock.now() - REPLACED_MAY_BE_MINED_MS));
}

/** Writes each listed invoice's watch end as watchUntil() says, once per data directory. */
function settleWatchEndsOnce(ctx: Context, flag: string, list: () => StoredInvoice[]): void {
  if (ctx.repos.meta.get(flag)) return;
  writeChainChange(ctx, () => {
    for (const inv of list()) {
      const until = watchUntil(inv);
      if (until !== null) ctx.repos.invoices.touch(inv.id, until);
    }
    ctx.repos.meta.set(flag, '1');
  });
}

const WATCH_ENDS_SETTLED = 'watch_ends_settled';
const REPLACED_WATCH_ENDS_SETTLED = 'replaced_watch_ends_settled';

/** The watch set as of now: every invoice whose address must be watched; `onShared` hears of one watched for two (WatchSet.add). */
export function loadWatchSet(ctx: Context, now: number, onShared?: (rowid: number, otherRowid: number) => void): WatchSet {
  // Sized up front: growing a million-entry table doubling by doubling rehashes it ten times.
  const set = new WatchSet(ctx.repos.invoices.countWatched(now));
  for (const [rowid, script] of ctx.repos.invoices.iterateWatched(now)) {
    const other = set.add(script, rowid);
    if (other) onShared?.(rowid, other);
  }
  return set;
}

export interface OutputMatch {
  invoice: StoredInvoice;
  vout: number;
  sats: number;
}

/**
 * An output of 0 sats pays nothing. Non-standard, but valid in a block, and
 * anyone can have one mined to an address a checkout page shows: taken for a
 * payment, the state machine refused it and the chain could not be read past it.
 */
function paysNothing(sats: number): boolean {
  return sats === 0;
}

/** Outputs of tx paying a watched address, confirmed against the invoice's stored script. */
export function matchOutputs(ctx: Context, watch: WatchSet, tx: Transaction): OutputMatch[] {
  const out: OutputMatch[] = [];
  tx.outs.forEach((o, vout) => {
    if (paysNothing(Number(o.value))) return;
    const candidates = watch.candidates(o.script);
    if (candidates.length === 0) return;
    const hex = Buffer.from(o.script).toString('hex');
    for (const rowid of candidates) {
      const inv = ctx.repos.invoices.getByRowid(rowid);
      if (inv && inv.scriptHex === hex) out.push({ invoice: inv, vout, sats: Number(o.value) });
    }
  });
  return out;
}

/**
 * The payments with p added or updated. A new outpoint joins only if it was
 * first seen before the invoice's `joinUntil`: a Till catching up after
 * downtime must not take more than a running one would have (the same list
 * when it does not join).
 */
function withPayment(inv: StoredInvoice, payments: Payment[], p: Payment): Payment[] {
  const i = payments.findIndex((x) => x.txid === p.txid && x.vout === p.vout);
  if (i < 0) {
    const until = joinUntil(inv);
    return until === null || p.firstSeenAt < until ? [...payments, p] : payments;
  }
  const next = [...payments];
  next[i] = { ...p, firstSeenAt: payments[i]!.firstSeenAt };
  return next;
}

/** The payments fact as the chain gives it: judged at `heldAt` only while catching up. */
function paymentsFact(ctx: Context, payments: Payment[], heldAt: number, now: number): Fact {
  const catchingUp = !ctx.chain.caughtUp;
  return { kind: 'payments', payments, catchingUp, heldAt: catchingUp ? heldAt : now };
}

/**
 * Runs the state machine on an invoice's new payment list and saves the
 * result. `heldAt`: when the chain held the list (the time of the block that
 * brought it, or of the node's first sight of a mempool transaction), used
 * while catching up (a running Till judges at now: a block's timestamp may be
 * off by an hour or more).
 */
function applyPayments(ctx: Context, inv: StoredInvoice, payments: Payment[], now: number, heldAt = now): StoredInvoice {
  const { invoice, events } = transition(inv, paymentsFact(ctx, payments, heldAt, now), now);
  if (payments === inv.payments && events.length === 0 && invoice.status === inv.status && invoice.paidAt === inv.paidAt && invoice.expiredAt === inv.expiredAt) {
    // Only confirmation counts moved (already written): a new version for the
    // checkout streams, and the watch horizon, without rewriting every payment.
    ctx.repos.invoices.touch(inv.id, watchUntil(invoice));
    return { ...inv, version: inv.version + 1 };
  }
  const countedBefore = new Map(inv.payments.map((p) => [outpointKey(p), isCounting(p)]));
  for (const p of payments) {
    // Gap-limit bookkeeping: a new payment funds this index of the xpub, and so does one that counts
    // again (back in the mempool, or mined after all).
    if (isCounting(p) && countedBefore.get(outpointKey(p)) !== true) ctx.repos.xpubs.recordFunding(inv.xpubId, inv.addressIndex, now);
  }
  const saved = saveTransition(ctx, inv, invoice, events);
  // Payments that stopped counting no longer fund the index (a wallet scanning the chain never sees them): the
  // highest funded index can move down only when nothing here counts any more and it was this one (a recount
  // reads every payment of the xpub, so it is kept to that case).
  if (inv.payments.some(isCounting) && !payments.some(isCounting)) ctx.repos.xpubs.recountFunding(inv.xpubId, inv.addressIndex);
  return saved;
}

/** A transaction seen in the mempool (ZMQ rawtx or the catch-up scan). */
export function applyMempoolTx(ctx: Context, watch: WatchSet, tx: Transaction, firstSeenAt: number): StoredInvoice[] {
  const matches = matchOutputs(ctx, watch, tx);
  if (matches.length === 0) return [];
  const txid = tx.getId();
  const spends = spentOutpoints(tx);
  const now = ctx.clock.now();
  return writeChainChange(ctx, () => {
    // Each invoice judged once, on its payments after the transaction: what it replaced and what it pays.
    const lists = new Map<string, { inv: StoredInvoice; payments: Payment[] }>();
    const replaced = replacedBy(ctx, txid, spends);
    for (const inv of replaced.invoices) lists.set(inv.id, { inv, payments: withReplaced(inv.payments, replaced.txids) });
    for (const m of matches) {
      let entry = lists.get(m.invoice.id);
      if (!entry) {
        const inv = ctx.repos.invoices.get(m.invoice.id)!;
        lists.set(inv.id, (entry = { inv, payments: inv.payments }));
      }
      const existing = entry.payments.find((p) => p.txid === txid && p.vout === m.vout);
      // Core republishes a transaction when it is mined: never downgrade.
      if (existing && existing.status !== 'replaced') continue;
      const seenAt = replacementSeenAt(entry.inv, replaced.txids, matches, firstSeenAt);
      const payment: Payment = { txid, vout: m.vout, amountSats: m.sats, status: 'mempool', confirmations: 0, blockHeight: null, blockHash: null, coinbase: false, firstSeenAt: seenAt };
      entry.payments = withPayment(entry.inv, entry.payments, payment);
    }
    // Each time, not only when new: a payment back in the mempool after a reorg, or known from before migration 0007.
    ctx.repos.paymentSpends.record(txid, spends);
    const changed = [...lists.values()].filter((e) => e.payments !== e.inv.payments);
    // Read while catching up (the start's mempool pass), it is judged as of when the node first had it.
    return changed.map((e) => applyPayments(ctx, e.inv, e.payments, now, firstSeenAt));
  });
}

/**
 * `<txid>:<vout>` of each output a transaction spends. A coinbase spends none:
 * its input is the null outpoint every coinbase has, and read as a spend it made
 * each coinbase paying an invoice "replace" the previous one.
 */
export function spentOutpoints(tx: Transaction): string[] {
  if (tx.isCoinbase()) return [];
  return tx.ins.map((i) => `${Buffer.from(i.hash).reverse().toString('hex')}:${i.index}`);
}

/**
 * The payments' transactions `txid` conflicts with (it spends what they spent:
 * RBF, a double spend), and the invoices where they count. The node took
 * `txid` in their place, so they stop counting in the same judgement that
 * counts it, never beside it. One Till still holds as confirmed is not on the
 * node's chain either (the node has `txid`): a reorg Till has not read yet,
 * as after a stop.
 */
function replacedBy(ctx: Context, txid: string, spends: readonly string[]): { txids: Set<string>; invoices: StoredInvoice[] } {
  const txids = ctx.repos.paymentSpends.conflicting(txid, spends);
  return { txids, invoices: txids.size === 0 ? [] : ctx.repos.invoices.listWithCountingPaymentsOf([...txids]) };
}

/**
 * When a transaction's outputs to `inv` replace its payments there (`replaced`: their txids)
 * for no more than they paid, it was sent when they were: a fee bump of a payment stuck past
 * the expiry is as on time as the payment. More is new money, seen when it is seen (else a
 * fiat price could be had after its expiry by replacing a payment of a few sats).
 */
function replacementSeenAt(inv: StoredInvoice, replaced: ReadonlySet<string>, outputs: readonly OutputMatch[], seenAt: number): number {
  const earlier = inv.payments.filter((p) => isCounting(p) && replaced.has(p.txid));
  if (earlier.length === 0) return seenAt;
  const pays = outputs.reduce((sum, o) => (o.invoice.id === inv.id ? sum + o.sats : sum), 0);
  const paid = earlier.reduce((sum, p) => sum + p.amountSats, 0);
  return pays <= paid ? Math.min(seenAt, ...earlier.map((p) => p.firstSeenAt)) : seenAt;
}

/** The payments with the counting ones of `txids` marked replaced (off any block); the same array if there are none. */
function withReplaced(payments: Payment[], txids: ReadonlySet<string>): Payment[] {
  const hit = (p: Payment) => isCounting(p) && txids.has(p.txid);
  return payments.some(hit) ? payments.map((p) => (hit(p) ? { ...p, status: 'replaced' as const, confirmations: 0, blockHeight: null, blockHash: null } : p)) : payments;
}

/** Where a block sits on the chain. */
export interface BlockHeader {
  height: number;
  hash: string;
  prevHash: string;
  /** The block's timestamp, ms. */
  time: number;
}

/** What a block on the best chain brings: where it sits, and the watched outputs it pays (with what their transaction spends). */
export interface BlockFacts extends BlockHeader {
  found: Array<OutputMatch & { txid: string; spends: string[]; coinbase: boolean }>;
}

/** The hash of the block a block builds on, in RPC byte order. */
export function prevHashOf(block: Block): string {
  return Buffer.from(block.prevHash!).reverse().toString('hex');
}

/** Reads a block's facts (outside any transaction: matching is the costly part, and holds no lock). */
export function readBlock(ctx: Context, watch: WatchSet, block: Block, height: number): BlockFacts {
  return {
    height,
    hash: block.getId(),
    prevHash: prevHashOf(block),
    time: block.timestamp * 1000,
    found: (block.transactions ?? []).flatMap((tx) => {
      const matches = matchOutputs(ctx, watch, tx);
      if (matches.length === 0) return [];
      const found = { txid: tx.getId(), spends: spentOutpoints(tx), coinbase: tx.isCoinbase() };
      return matches.map((m) => ({ ...m, ...found }));
    }),
  };
}

/** One move of the best chain: blocks that left it (tip first), then blocks that joined it (lowest first). */
export interface ChainChange {
  disconnected: Array<{ height: number; hash: string }>;
  connected: BlockFacts[];
  /**
   * Transactions of the disconnected blocks' payments that a block of the new
   * branch double-spends: replaced, not back to unconfirmed.
   */
  gone?: ReadonlySet<string>;
}

/** A block on the best chain at `height`. */
export function applyBlock(ctx: Context, watch: WatchSet, block: Block, height: number, now: number): StoredInvoice[] {
  return applyChainChange(ctx, { disconnected: [], connected: [readBlock(ctx, watch, block, height)] }, now);
}

/**
 * A move of the best chain, in one transaction: payments of blocks that left
 * it go back to unconfirmed, payments of blocks that joined it are confirmed,
 * recent payments' confirmation counts move, and the blocks are recorded as
 * processed. Each invoice touched is evaluated once, from its state before the
 * move to its payments after it: a payment that a reorg moves from one block
 * to another never looks lost (no false payment_reversed).
 */
export function applyChainChange(ctx: Context, change: ChainChange, now: number): StoredInvoice[] {
  const lowest = change.disconnected.at(-1);
  const tip = change.connected.at(-1)?.height ?? (lowest ? lowest.height - 1 : null);
  if (tip === null) return [];
  return writeChainChange(ctx, () => {
    // refused: new payments outside the invoice's window for new money as it stood before the change.
    const touched = new Map<string, { before: StoredInvoice; payments: Payment[]; refused: Payment[] }>();
    const take = (id: string, load: () => StoredInvoice) => {
      let entry = touched.get(id);
      if (!entry) {
        const inv = load();
        touched.set(id, (entry = { before: inv, payments: inv.payments, refused: [] }));
      }
      return entry;
    };
    // A disconnected block's payment is unconfirmed again, unless the new branch double-spent it, or it is
    // a coinbase: that never goes back to the mempool (only a reorg back to its block brings it back).
    const unmined = (p: Payment) => (p.coinbase || change.gone?.has(p.txid) ? ('replaced' as const) : ('mempool' as const));
    for (const { height, hash } of change.disconnected) {
      ctx.chain.blockChanges++;
      for (const inv of ctx.repos.invoices.listWithPaymentsInBlock(hash)) {
        const entry = take(inv.id, () => inv);
        entry.payments = entry.payments.map((p) => (p.blockHash === hash ? { ...p, status: unmined(p), confirmations: 0, blockHeight: null, blockHash: null } : p));
      }
      ctx.repos.chainBlocks.remove(height);
    }
    for (const b of change.connected) {
      ctx.chain.blockChanges++;
      // A payment first seen in a block (Till was down, or missed the mempool) counts from the block's time.
      const blockSeenAt = Math.min(now, b.time);
      // Recorded at that time too (read while catching up): a restart cut into the catch-up builds its watch
      // set as of these times (chainBlocks.readUpTo), and the blocks still unread are as old.
      ctx.repos.chainBlocks.insert({ height: b.height, hash: b.hash, prevHash: b.prevHash }, blockSeenAt);
      for (const m of b.found) {
        // Mined in place of an unconfirmed payment (a replacement Till did not see in the mempool): that one stops counting.
        const replaced = replacedBy(ctx, m.txid, m.spends);
        if (replaced.txids.size > 0) {
          for (const inv of replaced.invoices) take(inv.id, () => inv);
          // The touched ones too: a payment this change put back in the mempool (a reorg) is not yet so in the database.
          for (const e of touched.values()) e.payments = withReplaced(e.payments, replaced.txids);
        }
        ctx.repos.paymentSpends.record(m.txid, m.spends);
        const entry = take(m.invoice.id, () => ctx.repos.invoices.get(m.invoice.id)!);
        // Its transaction's outputs are looked for only when it replaced something: a block may pay thousands.
        const seenAt = replaced.txids.size === 0 ? blockSeenAt : replacementSeenAt(entry.before, replaced.txids, b.found.filter((o) => o.txid === m.txid), blockSeenAt);
        const payment: Payment = { txid: m.txid, vout: m.vout, amountSats: m.sats, status: 'confirmed', confirmations: 1, blockHeight: b.height, blockHash: b.hash, coinbase: m.coinbase, firstSeenAt: seenAt };
        const next = withPayment(entry.before, entry.payments, payment);
        if (next === entry.payments) entry.refused.push(payment);
        entry.payments = next;
      }
    }
    ctx.repos.chainBlocks.pruneBelow(tip - BLOCKS_KEPT);
    // Depths are taken from the change's first block, not its tip: a change of many blocks (a pruned
    // stretch, a reorg) moves payments from below the tip's reach past their thresholds too.
    const base = change.connected[0]?.height ?? tip + 1;
    const countedFrom = base - CONFIRMATION_TRACKING_DEPTH + 1;
    // Counts first, so every evaluation below sees the payments at the new tip's depth.
    ctx.repos.invoices.refreshConfirmations(tip, countedFrom);
    // Invoices with recent payments may cross their confirmation threshold now, and with a coinbase its maturity.
    for (const inv of ctx.repos.invoices.listWithPaymentsFromHeight(base - STATE_DEPTH + 1, base - COINBASE_MATURITY + 1)) take(inv.id, () => inv);
    const lastTime = change.connected.at(-1)?.time ?? now;
    const changed = [...touched.values()].map(({ before, payments, refused }) => {
      const counted = countedAt(payments, tip, countedFrom);
      // Judged at a block's time only while catching up (applyPayments), and only a pending or expired
      // invoice can settle: spare the rest the search (with one block, there is nothing to search).
      const search = !ctx.chain.caughtUp && change.connected.length > 1 && (before.status === 'pending' || before.status === 'expired');
      const heldAt = (search ? settlingBlockTime(before, counted, change.connected, change.disconnected.length > 0, now) : null) ?? lastTime;
      return applyPayments(ctx, before, countedAt(withLateJoiners(ctx, before, counted, refused, heldAt, now), tip, countedFrom), now, heldAt);
    });
    // After the payments are saved: one this change put back in the mempool keeps what it spends.
    ctx.repos.paymentSpends.prune(tip - BLOCKS_KEPT);
    return changed;
  });
}

/**
 * The payments with those refused against the invoice's window before the
 * change that the window it settles into takes: a block of the change that
 * made it late_paid opens paid_at + late window, so a duplicate mined after it
 * in the same change is reported for refund, as reading them one by one would.
 */
function withLateJoiners(ctx: Context, before: StoredInvoice, payments: Payment[], refused: Payment[], heldAt: number, now: number): Payment[] {
  if (refused.length === 0) return payments;
  const until = joinUntil(transition(before, paymentsFact(ctx, payments, heldAt, now), now).invoice);
  const joining = refused.filter((p) => until === null || p.firstSeenAt < until);
  return joining.length === 0 ? payments : [...payments, ...joining];
}

/**
 * The time of the first of `blocks` at which the payments, as that block left
 * them, settle the invoice (paid, expired, late_paid); null if none does. A
 * change of many blocks (a pruned stretch, a reorg's new branch) is judged
 * for each invoice at that block, as reading them one by one would have: a
 * late payment mined on day 1 of the window is late_paid, and paid_at is the
 * time of the block that paid, not of the change's last one. Only the blocks
 * where the invoice's payments were mined or reached their confirmations
 * can settle it, and after a reorg the new branch's first block. If none
 * settles it, the first block at which the on-time payments it waited for
 * past expires_at stopped covering it (a coinbase whose block the reorg
 * dropped: its first block shows that), so its wait is dated there
 * (waitEndedAt), not at the change's last block, which may be hours later.
 */
function settlingBlockTime(before: StoredInvoice, payments: Payment[], blocks: readonly BlockHeader[], reorg: boolean, now: number): number | null {
  const timeAt = new Map(blocks.map((b) => [b.height, b.time]));
  const known = new Set(before.payments.map(outpointKey));
  const needed = (p: Payment) => Math.max(confirmationsNeeded(p, before.confirmationsRequired), 1);
  const heights = new Set(payments.flatMap((p) => (p.blockHeight === null ? [] : [p.blockHeight, p.blockHeight + needed(p) - 1])));
  if (reorg && blocks[0]) heights.add(blocks[0].height);
  let waitEndedAt: number | null = null;
  for (const height of [...heights].filter((h) => timeAt.has(h)).sort((a, b) => a - b)) {
    // The payments as of `height`: mined above it, a known one was in the mempool (a coinbase, never there:
    // off the chain), a new one not seen yet.
    const asOf = payments.flatMap((p): Payment[] => {
      if (p.blockHeight === null) return [p];
      if (p.blockHeight <= height) return [{ ...p, confirmations: height - p.blockHeight + 1 }];
      return known.has(outpointKey(p)) ? [{ ...p, status: p.coinbase ? 'replaced' : 'mempool', confirmations: 0, blockHeight: null, blockHash: null }] : [];
    });
    const heldAt = timeAt.get(height)!;
    const after = transition(before, { kind: 'payments', payments: asOf, catchingUp: true, heldAt }, now).invoice;
    if (after.status !== before.status) return heldAt;
    if (waitEndedAt === null && after.waitEndedAt != null && before.waitEndedAt == null) waitEndedAt = heldAt;
  }
  return waitEndedAt;
}

/** The payments with their confirmation counts at `tip`, as refreshConfirmations sets them (mined from `fromHeight` up); the same array if none moved. */
function countedAt(payments: Payment[], tip: number, fromHeight: number): Payment[] {
  const depth = (p: Payment) => (p.status === 'confirmed' && p.blockHeight !== null && p.blockHeight >= fromHeight ? tip - p.blockHeight + 1 : p.confirmations);
  return payments.every((p) => depth(p) === p.confirmations) ? payments : payments.map((p) => ({ ...p, confirmations: depth(p) }));
}

/**
 * Unconfirmed payments whose transaction is no longer in the mempool (and was
 * not mined: those are confirmed by now) were replaced, double-spent or
 * evicted: they stop counting.
 */
export function reconcileMempool(ctx: Context, stillInMempool: (txid: string) => boolean): StoredInvoice[] {
  const now = ctx.clock.now();
  return writeChainChange(ctx, () =>
    ctx.repos.invoices.listWithMempoolPayments().flatMap((inv) => {
      const gone = new Set(inv.payments.filter((p) => p.status === 'mempool' && !isSimulatedPayment(inv, p.txid) && !stillInMempool(p.txid)).map((p) => p.txid));
      return gone.size === 0 ? [] : [applyPayments(ctx, inv, withReplaced(inv.payments, gone), now)];
    }),
  );
}

/** The chain's unconfirmed payments Till tracks, for a targeted mempool check. */
export function trackedMempoolTxids(ctx: Context): string[] {
  const txids = ctx.repos.invoices.listWithMempoolPayments().flatMap((inv) =>
    inv.payments.filter((p) => p.status === 'mempool' && !isSimulatedPayment(inv, p.txid)).map((p) => p.txid));
  return [...new Set(txids)];
}

/**
 * The facts of pruned blocks, from their headers and the node's UTXO set: the
 * watched outputs still unspent that each block created. Outputs already spent
 * again cannot be seen this way; outputs of other blocks are left out.
 */
export function scannedBlockFacts(ctx: Context, watch: WatchSet, headers: BlockHeader[], unspents: UnspentOutput[]): BlockFacts[] {
  const found = new Map<number, BlockFacts['found']>(headers.map((h) => [h.height, []]));
  for (const u of unspents) {
    const list = found.get(u.height);
    if (!list || paysNothing(u.sats)) continue;
    for (const rowid of watch.candidates(Buffer.from(u.scriptHex, 'hex'))) {
      const inv = ctx.repos.invoices.getByRowid(rowid);
      // What it spent is not in the UTXO set: a payment it replaced is found by the mempool check after the blocks.
      if (inv && inv.scriptHex === u.scriptHex) list.push({ invoice: inv, vout: u.vout, sats: u.sats, txid: u.txid, spends: [], coinbase: u.coinbase });
    }
  }
  return headers.map((h) => ({ ...h, found: found.get(h.height)! }));
}
