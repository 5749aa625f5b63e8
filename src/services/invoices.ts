import { createHash } from 'node:crypto';
import type { StoredInvoice } from '../db/invoices.ts';
import { ApiError, invoiceNotFound } from '../domain/errors.ts';
import { gapLimitReached } from '../domain/gap-limit.ts';
import type { Invoice } from '../domain/invoice.ts';
import type { InvoiceRequest } from '../domain/invoice-request.ts';
import { transition, type DomainEvent } from '../domain/invoice-state.ts';
import { centsToSats } from '../domain/money.ts';
import { simulate, type SimulatedEvent } from '../domain/simulate.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../log.ts';
import { addressAt } from './address-pool.ts';
import type { Caller } from './api-keys.ts';
import type { Context } from './context.ts';
import { assertDiskWritable, runRequestedWrite } from './disk.ts';
import { recordEvents } from './events.ts';
import { refusePrivateReceiver } from './webhooks.ts';
import { startLoop } from './workers.ts';
import { getOrInsert } from '../get-or-insert.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface CreateResult {
  status: number;
  /** The exact response body; a replay returns the same bytes. */
  body: string;
  replayed: boolean;
  invoice: StoredInvoice | null;
}

function envOf(caller: Caller): 'live' | 'test' {
  return caller.apiKey.env;
}

/** Hash of the request's meaning: the same JSON with keys in another order is the same request. */
export function hashRequest(body: unknown): string {
  const canonical = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
      : Array.isArray(v) ? v.map(canonical) : v;
  return createHash('sha256').update(JSON.stringify(canonical(body))).digest('hex');
}

/** A fresh cached answer for this key, a conflict, or null. Runs before and inside the write. */
function checkIdempotency(ctx: Context, caller: Caller, key: string, requestHash: string): CreateResult | null {
  const cached = ctx.repos.idempotency.get(caller.apiKey.id, key);
  if (!cached || ctx.clock.now() - cached.createdAt >= IDEMPOTENCY_TTL_MS) return null;
  if (cached.requestHash !== requestHash) {
    throw new ApiError('idempotency_conflict', 'this Idempotency-Key was used with a different request body; reuse it with the original body or use a new key');
  }
  return { status: cached.status, body: cached.body, replayed: true, invoice: null };
}

export interface CreateInvoiceInput {
  caller: Caller;
  /** The parsed body; parse errors surface before any lookup. */
  parse: () => InvoiceRequest;
  /** hashRequest of the body; compared only when there is an idempotency key. */
  requestHash: string;
  idempotencyKey: string | null;
  /**
   * Asked once the request is known not to be a replay; throws to refuse it
   * (the rate limit). The returned slot is released when nothing is created,
   * so only creations count.
   */
  admit?: () => { release(): void };
}

/**
 * POST /v1/invoices: the checks in the order the spec's table implies, then
 * one group-committed transaction that takes an address index, writes the
 * invoice, its invoice.created event and the idempotency entry together.
 */
export async function createInvoice(ctx: Context, input: CreateInvoiceInput): Promise<CreateResult> {
  const { caller, idempotencyKey, requestHash } = input;
  if (!idempotencyKey) return createNew(ctx, input);
  // A retry sent while its original is still being written waits for it, and
  // is then answered as its replay (or refused as a conflict), never with a
  // rate-limit slot of its own.
  const underWay = keyedCreations(ctx);
  const key = `${caller.apiKey.id} ${idempotencyKey}`;
  for (let original = underWay[key]; original; original = underWay[key]) await original.catch(() => {});
  const replay = checkIdempotency(ctx, caller, idempotencyKey, requestHash);
  if (replay) return replay;
  const creation = createNew(ctx, input);
  underWay[key] = creation;
  try {
    return await creation;
  } finally {
    if (underWay[key] === creation) delete underWay[key];
  }
}

const creationsUnderWay = new WeakMap<Context, Record<string, Promise<CreateResult>>>();

/**
 * This process's keyed creations not answered yet, by API key id and
 * Idempotency-Key. A plain object, not a Map: a long-lived Map that takes and
 * drops an entry per request kept the dropped creations alive through V8's
 * young collections (~1.2 KB a creation promoted, docs/PERFORMANCE.md).
 */
function keyedCreations(ctx: Context): Record<string, Promise<CreateResult>> {
  return getOrInsert(creationsUnderWay, ctx, () => Object.create(null));
}

async function createNew(ctx: Context, input: CreateInvoiceInput): Promise<CreateResult> {
  // The body's 400s before the rate limit: a client is told of its own error even while limited.
  const req = input.parse();
  if (req.callbackUrl) refusePrivateReceiver(ctx, 'callback_url', req.callbackUrl);
  const slot = input.admit?.();
  let result: CreateResult;
  try {
    result = await createAdmitted(ctx, input, req);
  } catch (err) {
    slot?.release();
    throw err;
  }
  if (!result.invoice) slot?.release();
  return result;
}

async function createAdmitted(ctx: Context, input: CreateInvoiceInput, req: InvoiceRequest): Promise<CreateResult> {
  const { caller, idempotencyKey, requestHash } = input;
  const live = envOf(caller) === 'live';

  return ctx.writes.run(() => {
    if (idempotencyKey) {
      // A request with the same key may have committed while this one waited.
      const replay = checkIdempotency(ctx, caller, idempotencyKey, requestHash);
      if (replay) return replay;
    }
    const now = ctx.clock.now();
    const store = caller.store;
    // The index is handed out first; a refusal below rolls it back with the rest of the job.
    const taken = ctx.repos.xpubs.takeActiveIndex(store.id, envOf(caller));
    if (!taken) {
      const fix = `${ctx.config.dashboardUrl || ctx.baseUrl}/stores/${store.id}/xpubs`;
      throw new ApiError('no_active_xpub', `store ${store.id} has no active ${envOf(caller)} xpub. Add one at ${fix} or run: till xpub add --store ${store.id} --env ${envOf(caller)} <xpub>`);
    }
    const { xpub, index } = taken;
    if (live && gapLimitReached(xpub, now)) {
      throw new ApiError('gap_limit_exceeded', `the wallet's gap limit (${xpub.gapLimit}) is within 5 of being reached and no payment was seen in 24 hours. Raise the gap limit in your wallet (100 or more recommended) and run: till xpub add --store ${store.id} --env live --gap-limit 100 <xpub>, or rotate to a new xpub.`);
    }
    // The 503s after every refusal that does not need a rate: a 503 says the
    // call would have succeeded without the condition (spec 7.1), so a client
    // is not told of its own error only after retrying. (A USD amount too
    // small for 1 sat can only be known with a rate.)
    const { amountSats, fiat } = priceOf(ctx, req);
    if (live) assertChainKnown(ctx);
    assertDiskWritable(ctx);
    const addr = addressAt(ctx, xpub, index);
    const fields: Omit<StoredInvoice, 'rowid'> = {
      id: newId('inv', now),
      storeId: store.id,
      livemode: live,
      status: 'pending',
      amountSats,
      fiat,
      address: addr.address,
      confirmationsRequired: store.confirmationsRequired,
      lateWindowMs: store.lateWindowMinutes * 60_000,
      expiresAt: now + (req.expiresInMinutes ?? store.expiryMinutes) * 60_000,
      createdAt: now,
      paidAt: null,
      cancelledAt: null,
      expiredAt: null,
      metadata: req.metadata,
      callbackUrl: req.callbackUrl ?? null,
      payments: [],
      xpubId: xpub.id,
      addressIndex: addr.index,
      scriptHex: addr.scriptHex,
      version: 1,
    };
    const invoice: StoredInvoice = { ...fields, rowid: ctx.repos.invoices.insert(fields) };
    const body = recordEvents(ctx, invoice, [{ type: 'invoice.created' }]);
    if (idempotencyKey) ctx.repos.idempotency.put(caller.apiKey.id, idempotencyKey, { requestHash, status: 201, body, createdAt: now });
    return { status: 201, body, replayed: false, invoice };
  }).then((result) => {
    if (result.invoice) ctx.feed.publish(result.invoice);
    return result;
  });
}

/**
 * A live invoice needs a chain tip to watch from: a watched chain, not one in
 * initial block download, and not none at all. A new till's first sync starts
 * at the node's tip, so a payment mined before bitcoind first answered would
 * never be seen.
 */
function assertChainKnown(ctx: Context): void {
  if (!ctx.chain.watched) {
    throw new ApiError('chain_syncing', 'this till watches no chain (bitcoind.enabled = false, e.g. the demo), so no payment to a live invoice would be seen: it makes test invoices only. Set bitcoind.enabled = true and restart it to take live payments.');
  }
  if (ctx.chain.initialBlockDownload) {
    throw new ApiError('chain_syncing', 'the Bitcoin node is still syncing; new live invoices are refused against a stale chain tip. Retry later.');
  }
  if (!ctx.chain.caughtUp && ctx.repos.chainBlocks.tip() === null) {
    throw new ApiError('chain_syncing', 'the Bitcoin node has not answered yet: a new till learns the chain tip before its first live invoice, so no payment to it can be missed. Retry once bitcoind is reachable (GET /healthz shows the chain).');
  }
}

/** The invoice's amount in sats, and for a USD price the rate it was priced at (503 rates_unavailable without one). */
function priceOf(ctx: Context, req: InvoiceRequest): { amountSats: number; fiat: Invoice['fiat'] } {
  if (req.kind === 'sats') return { amountSats: req.amountSats, fiat: null };
  if (!ctx.rates) throw new ApiError('rates_unavailable', 'no USD rate source is running');
  const rate = ctx.rates.current();
  const amountSats = centsToSats(req.amountCents, rate.rateCentsPerBtc);
  if (amountSats === 0) throw new ApiError('invalid_amount', 'amount rounds to zero sats at the current rate', { param: 'amount' });
  return { amountSats, fiat: { amountCents: req.amountCents, currency: 'USD', rateCentsPerBtc: rate.rateCentsPerBtc, rateSource: rate.source, rateFetchedAt: rate.fetchedAt } };
}

/** An invoice the caller may see: its store and its environment, else not_found (never leak existence). */
export function getInvoiceFor(ctx: Context, caller: Caller, id: string): StoredInvoice {
  const inv = ctx.repos.invoices.get(id);
  if (!inv || inv.storeId !== caller.store.id || inv.livemode !== (envOf(caller) === 'live')) {
    throw invoiceNotFound(id);
  }
  return inv;
}

/**
 * Applies a state-machine result: the new state, payments and events in one
 * transaction, then tells subscribers. Used by cancel, simulate, expiry and the
 * chain watcher alike.
 */
export function saveTransition(ctx: Context, before: StoredInvoice, after: Invoice, events: readonly DomainEvent[]): StoredInvoice {
  ctx.repos.invoices.saveTransition(before, after);
  recordEvents(ctx, after, events);
  return { ...before, ...after, version: before.version + 1 };
}

async function changeInvoice(
  ctx: Context,
  caller: Caller,
  id: string,
  change: (inv: StoredInvoice, now: number) => { invoice: Invoice; events: DomainEvent[] },
): Promise<StoredInvoice> {
  const saved = await runRequestedWrite(ctx, () => {
    const inv = getInvoiceFor(ctx, caller, id);
    const { invoice, events } = change(inv, ctx.clock.now());
    return saveTransition(ctx, inv, invoice, events);
  });
  ctx.feed.publish(saved);
  return saved;
}

export function cancelInvoice(ctx: Context, caller: Caller, id: string): Promise<StoredInvoice> {
  return changeInvoice(ctx, caller, id, (inv, now) => transition(inv, { kind: 'cancel' }, now));
}

export function simulateInvoice(ctx: Context, caller: Caller, id: string, event: SimulatedEvent, amountSats?: number): Promise<StoredInvoice> {
  if (envOf(caller) === 'live') {
    getInvoiceFor(ctx, caller, id);
    throw new ApiError('test_mode_only', 'simulate works on test-mode invoices only');
  }
  return changeInvoice(ctx, caller, id, (inv, now) => simulate(inv, event, now, { amountSats }));
}

/**
 * Moves pending invoices whose time is up through the state machine. Due
 * times live in the database, so a restart loses nothing; live invoices wait
 * for the first chain catch-up, or a payment Till has not seen yet could be
 * mistaken for none.
 */
export async function expireDueInvoices(ctx: Context, batch = 500): Promise<number> {
  const now = ctx.clock.now();
  const due = ctx.repos.invoices.duePending(now, batch, ctx.chain.caughtUp);
  if (due.length === 0) return 0;
  const saved = await ctx.writes.run(() =>
    due.flatMap((before) => {
      const current = ctx.repos.invoices.get(before.id);
      if (!current || current.status !== 'pending') return [];
      const { invoice, events } = transition(current, { kind: 'tick' }, now);
      return events.length || invoice.status !== current.status ? [saveTransition(ctx, current, invoice, events)] : [];
    }),
  );
  saved.forEach((inv) => ctx.feed.publish(inv));
  return saved.length;
}

/**
 * How often the server lists new invoices (migration 0016): each store's
 * new ones go in as one run, and a list sorts at most this long's creations.
 */
export const LIST_INTERVAL_MS = 50;

/**
 * Lists the invoices created since the last call (migration 0016), in one
 * write that rides the next group commit. Lists read the unlisted invoices
 * too, so this only decides how many a list sorts: run every LIST_INTERVAL_MS.
 */
export async function listNewInvoices(ctx: Context): Promise<number> {
  if (!ctx.repos.invoices.hasUnlisted()) return 0;
  return ctx.writes.run(() => ctx.repos.invoices.listNew());
}

/** The server's loop of listNewInvoices (the invoices bench runs it beside its in-process creations too). */
export function startListingInvoices(ctx: Context, logger: Logger): { stop(): Promise<void> } {
  return startLoop('invoice-list', LIST_INTERVAL_MS, logger, () => listNewInvoices(ctx));
}
