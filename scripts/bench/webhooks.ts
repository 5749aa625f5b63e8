// Webhook delivery with the real runtime in this process and a receiver in a
// child process: signed deliveries per second, picking due deliveries among a
// million waiting for retry, and event committed -> receiver called.
// Run: node scripts/bench/webhooks.ts
import { systemClock } from '../../src/clock.ts';
import { startDbThread, type DbThread } from '../../src/db/db-thread.ts';
import { openDatabase } from '../../src/db/connection.ts';
import { mintApiKey, authenticateApiKey, type Caller } from '../../src/services/api-keys.ts';
import { refillAddressPool } from '../../src/services/address-pool.ts';
import { createContext, type Context } from '../../src/services/context.ts';
import { createInvoice, hashRequest } from '../../src/services/invoices.ts';
import { createStore } from '../../src/services/stores.ts';
import { createEndpoint } from '../../src/services/webhooks.ts';
import { addXpub } from '../../src/services/xpubs.ts';
import { parseInvoiceRequest } from '../../src/domain/invoice-request.ts';
import { newId } from '../../src/ids.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { testTpub } from '../../test/helpers/keys.ts';
import { makeTempDir } from './support/cleanup.ts';
import { devNullLogger, progressLog } from './support/logger.ts';
import { explainMiss, percentile, printResults, round, type BenchRow } from './support/results.ts';
import type { ReceiverMessage } from './support/receiver.ts';
import { startReceiver, type Receiver } from './support/start-receiver.ts';
import { benchConfig, insertWaitingDeliveries, openSeedContext } from './support/seed.ts';

const ONE_ENDPOINT_EVENTS = 6_000;
const MANY_ENDPOINTS = 16;
const MANY_ENDPOINT_EVENTS = 6_000;
/** A throughput run stops here even if the backlog is not drained (the rate is what was delivered so far). */
const THROUGHPUT_DEADLINE_MS = 20_000;
const WAITING = 1_000_000;
const DUE = 100;
const PICK_WARMUP = 10;
const PICK_RUNS = 200;
const LATENCY_WARMUP = 20;
const LATENCY_SAMPLES = 500;
const DELIVERY_TARGET = 5000;

const log = progressLog('webhooks');

interface BenchStore {
  storeId: string;
  path: string;
  secret: string;
}

function makeStore(ctx: Context, receiverUrl: string, i: number): BenchStore {
  const { store } = createStore(ctx, { name: `hooks ${i}`, mode: 'test' });
  const path = `/hooks/${i}`;
  const { secret } = createEndpoint(ctx, store.id, { url: receiverUrl + path });
  return { storeId: store.id, path, secret };
}

/** Outbox rows as invoice creation writes them (not yet dispatched), with a real invoice.created body. */
function insertEvents(ctx: Context, stores: BenchStore[], count: number, template: string): void {
  const now = ctx.clock.now();
  ctx.db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const id = newId('evt', now);
      const storeId = stores[i % stores.length]!.storeId;
      const body = template.replace(/"event_id":"evt_[0-9a-z]+"/, `"event_id":"${id}"`);
      ctx.repos.events.insert({ id, type: 'invoice.created', storeId, invoiceId: null, livemode: false, createdAt: now, body });
    }
  }).immediate();
}

function countSucceeded(ctx: Context): number {
  return (ctx.db.prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'success'").get() as { n: number }).n;
}

/** Nothing left to send: O(1) through the partial index (counting successes every 25 ms was ~3 % of the worker's loop). */
function backlogDrained(ctx: Context): boolean {
  return !ctx.repos.events.hasUndispatched() && ctx.db.prepare("SELECT 1 FROM webhook_deliveries WHERE status = 'attempting' LIMIT 1").get() === undefined;
}

/** Starts the worker on the outbox backlog; deliveries per second until it is drained (or the deadline). */
async function measureDeliveries(rt: Runtime, expected: number): Promise<{ rate: number; delivered: number; drained: boolean }> {
  const ctx = rt.ctx;
  const before = countSucceeded(ctx);
  const started = performance.now();
  rt.webhooks.start();
  while (performance.now() - started < THROUGHPUT_DEADLINE_MS) {
    await new Promise((r) => setTimeout(r, 25));
    if (backlogDrained(ctx)) break;
  }
  const elapsed = performance.now() - started;
  await rt.webhooks.stop();
  const delivered = countSucceeded(ctx) - before;
  // What the deadline left undelivered must not queue ahead of the next measurement.
  ctx.db.prepare("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL WHERE status = 'attempting'").run();
  ctx.db.prepare('UPDATE events SET dispatched = 1 WHERE dispatched = 0').run();
  return { rate: Math.round((delivered * 1000) / elapsed), delivered, drained: delivered >= expected };
}

/** Creates invoices one at a time; time from the creation's commit to the receiver's arrival of its event. */
async function measureLatency(rt: Runtime, caller: Caller, receiver: Receiver): Promise<number[]> {
  const arrivals = new Map<string, number>();
  let waiting: { eventId: string; resolve: () => void } | null = null;
  const onMessage = (m: ReceiverMessage) => {
    if (m.type !== 'arrival') return;
    arrivals.set(m.eventId, m.atNs);
    if (waiting?.eventId === m.eventId) waiting.resolve();
  };
  receiver.child.proc.on('message', onMessage);
  receiver.command({ type: 'report-arrivals', on: true });
  rt.webhooks.start();
  const body = { amount_sats: 1000 };
  const samples: number[] = [];
  try {
    for (let i = 0; i < LATENCY_WARMUP + LATENCY_SAMPLES; i++) {
      const created = await createInvoice(rt.ctx, { caller, parse: () => parseInvoiceRequest(body), requestHash: hashRequest(body), idempotencyKey: null });
      // The promise settles right after the group commit.
      const committedNs = Number(process.hrtime.bigint());
      const eventId = rt.ctx.repos.events.listForInvoice(created.invoice!.id)[0]!.id;
      if (!arrivals.has(eventId)) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`event ${eventId} did not reach the receiver within 10 s`)), 10_000);
          waiting = { eventId, resolve: () => (clearTimeout(timer), resolve()) };
        });
        waiting = null;
      }
      if (i >= LATENCY_WARMUP) samples.push((arrivals.get(eventId)! - committedNs) / 1e6);
    }
  } finally {
    await rt.webhooks.stop();
    receiver.command({ type: 'report-arrivals', on: false });
    receiver.child.proc.off('message', onMessage);
  }
  return samples;
}

/**
 * A data dir of its own holding a million deliveries waiting for retry; then,
 * through an ordinary context on it, dueTargets + dueForTarget as
 * DeliveryWorker.pump asks them (16 slots a target).
 */
function measurePickAmongWaiting(dataDir: string, receiverUrl: string): { times: number[]; picked: number } {
  const seed = openSeedContext(dataDir);
  try {
    const { store } = createStore(seed, { name: 'retries', mode: 'test' });
    const endpoints = Array.from({ length: 16 }, (_, i) => createEndpoint(seed, store.id, { url: `${receiverUrl}/failing/${i}` }).endpoint);
    insertWaitingDeliveries(seed.db, { storeId: store.id, endpoints, count: WAITING, due: DUE, now: seed.clock.now() });
  } finally {
    seed.db.close();
  }
  const db = openDatabase(dataDir);
  try {
    const repo = createContext(db, systemClock, benchConfig(dataDir)).repos.webhookDeliveries;
    const now = systemClock.now();
    const times: number[] = [];
    let picked = 0;
    for (let run = 0; run < PICK_WARMUP + PICK_RUNS; run++) {
      const started = performance.now();
      picked = 0;
      for (const target of repo.dueTargets(now, 10_000)) picked += repo.dueForTarget(target, now, 16).length;
      if (run >= PICK_WARMUP) times.push(performance.now() - started);
    }
    return { times, picked };
  } finally {
    db.close();
  }
}

export async function runWebhooksBench(): Promise<BenchRow[]> {
  const dir = makeTempDir('till-bench-webhooks-');
  const retries = makeTempDir('till-bench-retries-');
  let receiver: Receiver | null = null;
  let rt: Runtime | null = null;
  let dbThread: DbThread | null = null;
  try {
    receiver = await startReceiver();
    rt = createRuntime(benchConfig(dir.path), { logger: devNullLogger() });
    const ctx = rt.ctx;
    // As `till serve` runs it: WAL checkpoints and the outcomes' commits in the db thread.
    dbThread = startDbThread(ctx.db, { busyTimeoutMs: 5000, onError: (err) => log(err.message) });
    ctx.writes.useThread(dbThread);
    const one = makeStore(ctx, receiver.url, 0);
    const many = Array.from({ length: MANY_ENDPOINTS }, (_, i) => makeStore(ctx, receiver!.url, i + 1));
    receiver.command({ type: 'secrets', byPath: Object.fromEntries([one, ...many].map((s) => [s.path, s.secret])) });

    // A real invoice through the service gives the event body every bench event carries.
    const { xpub } = addXpub(ctx, { storeId: one.storeId, env: 'test', key: testTpub('bench-webhooks') });
    await refillAddressPool(ctx, xpub.id, LATENCY_WARMUP + LATENCY_SAMPLES + 10);
    const caller = authenticateApiKey(ctx, `Bearer ${mintApiKey(ctx, one.storeId, 'test').key}`);
    const body = { amount_sats: 1000 };
    const first = await createInvoice(ctx, { caller, parse: () => parseInvoiceRequest(body), requestHash: hashRequest(body), idempotencyKey: null });
    const template = ctx.repos.events.listForInvoice(first.invoice!.id)[0]!.body;

    log(`${ONE_ENDPOINT_EVENTS.toLocaleString('en-US')} deliveries to one endpoint`);
    insertEvents(ctx, [one], ONE_ENDPOINT_EVENTS, template);
    const single = await measureDeliveries(rt, ONE_ENDPOINT_EVENTS + 1);

    log(`${MANY_ENDPOINT_EVENTS.toLocaleString('en-US')} deliveries to ${MANY_ENDPOINTS} endpoints`);
    insertEvents(ctx, many, MANY_ENDPOINT_EVENTS, template);
    const spread = await measureDeliveries(rt, MANY_ENDPOINT_EVENTS);
    const signatures = await receiver.stats();

    log(`latency over ${LATENCY_SAMPLES} invoices`);
    const latency = await measureLatency(rt, caller, receiver);

    log(`inserting ${WAITING.toLocaleString('en-US')} deliveries waiting for retry`);
    const pick = measurePickAmongWaiting(retries.path, receiver.url);

    const worker = `the real DeliveryWorker (at most 16 attempts in flight per endpoint, 32 per receiving host, 256 in all), each attempt signed afresh, sent over kept-alive connections and recorded in SQLite (synchronous=FULL, outcomes group-committed within 5 ms by the db thread, which also checkpoints, as in till serve); the outbox dispatch is included; receiver in a child process checked every signature (${signatures.valid} valid, ${signatures.invalid} invalid)`;
    const drainNote = (r: { drained: boolean; delivered: number }) => (r.drained ? '' : ` Not drained within ${THROUGHPUT_DEADLINE_MS / 1000} s: ${r.delivered} delivered.`);
    const cause =
      'each attempt is a real signed HTTP exchange with a receiver in another process over loopback and its outcome a durable write: the worker\'s event loop (undici\'s client about 40 % of it), the db thread\'s commits and the receiver share the machine\'s two cores (docs/PERFORMANCE.md).';
    const rows: BenchRow[] = [
      {
        name: `signed deliveries, ${MANY_ENDPOINTS} endpoints`,
        value: spread.rate,
        unit: 'deliveries/s',
        target: `≥ ${DELIVERY_TARGET}`,
        note: `A backlog of ${MANY_ENDPOINT_EVENTS.toLocaleString('en-US')} invoice.created events over ${MANY_ENDPOINTS} stores, one endpoint each, all on the same local receiver; ${worker}.${drainNote(spread)}`,
      },
      {
        name: 'signed deliveries, 1 endpoint (≤ 16 in flight)',
        value: single.rate,
        unit: 'deliveries/s',
        note:
          `${ONE_ENDPOINT_EVENTS.toLocaleString('en-US')} events to one endpoint, the same worker. No target of its own: one endpoint never has more than 16 attempts in flight ` +
          `(the per-endpoint bound that keeps a slow receiver from taking every slot), so this is 16 ÷ the round trip; with 32 it did ~10-15 % more (docs/PERFORMANCE.md).${drainNote(single)}`,
      },
      {
        name: 'pick due deliveries, 1M waiting (p99)',
        value: round(percentile(pick.times, 99), 3),
        unit: 'ms',
        target: '≤ 5',
        note:
          `${WAITING.toLocaleString('en-US')} deliveries waiting for a retry (each of its own event, over 16 endpoints; short stand-in bodies), ${pick.picked} of them due: ` +
          `dueTargets + dueForTarget as DeliveryWorker.pump calls them, ${PICK_RUNS} runs after ${PICK_WARMUP} warm-up; p50 ${round(percentile(pick.times, 50), 3)} ms.`,
      },
      {
        name: 'event committed → receiver called (p99)',
        value: round(percentile(latency, 99), 2),
        unit: 'ms',
        target: '≤ 50',
        note: `${LATENCY_SAMPLES} invoices created one at a time through the invoice service with the worker running; from the creation's commit to the receiver reading the request (process.hrtime, one monotonic clock for both processes); p50 ${round(percentile(latency, 50), 2)} ms.`,
      },
    ];
    const why: Record<string, string> = {
      [`signed deliveries, ${MANY_ENDPOINTS} endpoints`]: cause,
      'pick due deliveries, 1M waiting (p99)':
        'the due range of webhook_deliveries_due is scanned for distinct targets, then each target\'s due rows read through webhook_deliveries_target_due (docs/PERFORMANCE.md).',
    };
    return rows.map((row) => (why[row.name] ? explainMiss(row, why[row.name]!) : row));
  } finally {
    rt?.ctx.writes.useThread(null);
    await dbThread?.stop();
    await rt?.stop();
    await receiver?.child.stop();
    dir.remove();
    retries.remove();
  }
}

if (import.meta.main) printResults('webhooks', await runWebhooksBench());
