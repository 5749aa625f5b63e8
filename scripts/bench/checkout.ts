// The public checkout under load: many SSE streams held open on one invoice,
// the server's memory with them, how fast one change reaches all of them, one
// subscriber's latency, and GET /pay/invoices/:id throughput.
// Till runs as `till serve` in its own process (durable commits, request log
// on, stdout to /dev/null); the SSE clients and the latency probe run in this
// process, the GET load comes from wrk (a third process).
// Run: node scripts/bench/checkout.ts   (CHECKOUT_BENCH_STREAMS=N, default 10000)
import { get, type ClientRequest } from 'node:http';
import { spawnSync } from 'node:child_process';
import { mintApiKey } from '../../src/services/api-keys.ts';
import { createStore } from '../../src/services/stores.ts';
import { addXpub } from '../../src/services/xpubs.ts';
import { testTpub } from '../../test/helpers/keys.ts';
import { freePort, readMemoryMiB, startBenchServer, startTillServe, waitForHttp, type NodeChild } from './support/children.ts';
import { makeTempDir } from './support/cleanup.ts';
import { progressLog } from './support/logger.ts';
import { explainMiss, percentile, printResults, round, type BenchRow } from './support/results.ts';
import { BENCH_ENV, openSeedContext } from './support/seed.ts';
import { runWrkWarm, type WrkResult } from './support/wrk.ts';

const STREAMS = Number(process.env.CHECKOUT_BENCH_STREAMS ?? 10_000);
const LATENCY_CHANGES = 200;
/** Connections opened at once while building up the held streams (the listen backlog is 511). */
const OPEN_BATCH = 250;
const GET_CONNECTIONS = 64;
const GET_SECONDS = 10;
/** Invoice creation allows 100 a minute per key; the latency probe needs LATENCY_CHANGES + 1 invoices. */
const KEYS = Math.ceil((LATENCY_CHANGES + 1) / 90);

const log = progressLog('checkout');

/** The open-files limit children of this process get (`ulimit -n`). */
function openFilesLimit(): number {
  return Number(spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim());
}

interface Server {
  child: NodeChild;
  url: string;
  keys: string[];
}

async function startServer(dataDir: string): Promise<Server> {
  const ctx = openSeedContext(dataDir);
  let keys: string[];
  try {
    const { store } = createStore(ctx, { name: 'Bench shop', mode: 'test' });
    addXpub(ctx, { storeId: store.id, env: 'test', key: testTpub('bench-checkout') });
    keys = Array.from({ length: KEYS }, () => mintApiKey(ctx, store.id, 'test').key);
  } finally {
    ctx.db.close();
  }
  const port = await freePort();
  const limit = String(STREAMS + 1000);
  const child = startTillServe(['--data-dir', dataDir, '--port', String(port)], {
    env: { ...BENCH_ENV, TILL_MAX_STREAMS_PER_CLIENT: limit, TILL_MAX_STREAMS_TOTAL: limit },
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/healthz`, child);
  return { child, url, keys };
}

let keyTurn = 0;

async function api(server: Server, path: string, body: unknown): Promise<any> {
  const key = server.keys[keyTurn++ % server.keys.length]!;
  const res = await fetch(server.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** V8 hands back the pages of the opening burst once the process has been idle for a while. */
const SETTLE_MS = 30_000;

/** An SSE client that only notes when the `paid` snapshot arrives. */
interface Watcher {
  req: ClientRequest;
  paidAt: number | null;
}

function watch(url: string): Promise<Watcher> {
  return new Promise((resolve, reject) => {
    let text = '';
    const watcher: Watcher = { req: null as unknown as ClientRequest, paidAt: null };
    watcher.req = get(url, { agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`SSE open answered ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (watcher.paidAt !== null) return;
        text += chunk;
        if (text.includes('"status":"paid"')) watcher.paidAt = performance.now();
      });
      resolve(watcher);
    });
    watcher.req.on('error', reject);
  });
}

/** Reads the stream until a chunk contains `needle`; resolves with that chunk's arrival time. */
async function readUntil(reader: ReadableStreamDefaultReader<string>, needle: string): Promise<number> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`stream ended before ${needle}`);
    if (value.includes(needle)) return performance.now();
  }
}

async function measureHeldStreams(server: Server): Promise<BenchRow[]> {
  const inv = await api(server, '/v1/invoices', { amount_sats: 25_000 });
  const url = `${server.url}/pay/invoices/${inv.id}/events`;
  const before = readMemoryMiB(server.child.proc.pid!);
  log(`opening ${STREAMS.toLocaleString('en-US')} SSE streams`);
  const watchers: Watcher[] = [];
  const openStart = performance.now();
  try {
    for (let i = 0; i < STREAMS; i += OPEN_BATCH) {
      const batch = Math.min(OPEN_BATCH, STREAMS - i);
      watchers.push(...(await Promise.all(Array.from({ length: batch }, () => watch(url)))));
    }
    const openMs = performance.now() - openStart;
    const peak = readMemoryMiB(server.child.proc.pid!).rss;
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const held = readMemoryMiB(server.child.proc.pid!);

    log('one change (simulate paid) to all streams');
    const changeStart = performance.now();
    await api(server, `/v1/invoices/${inv.id}/simulate`, { event: 'paid' });
    const answeredMs = performance.now() - changeStart;
    const deadline = changeStart + 30_000;
    while (watchers.some((w) => w.paidAt === null) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    const missed = watchers.filter((w) => w.paidAt === null).length;
    const arrivals = watchers.flatMap((w) => (w.paidAt === null ? [] : [w.paidAt - changeStart]));
    return [
      {
        name: `server RSS with ${STREAMS.toLocaleString('en-US')} SSE streams`,
        value: Math.round(held.rss),
        unit: 'MiB',
        target: '≤ 300',
        note: `VmRSS of till serve holding ${STREAMS.toLocaleString('en-US')} idle streams on one invoice, ${SETTLE_MS / 1000} s after the last one opened (${Math.round(peak)} MiB right after opening, before V8 handed back the pages of the burst). ${Math.round(before.rss)} MiB before, +${round(((held.rss - before.rss) * 1024) / STREAMS, 1)} KiB a stream; opened in ${round(openMs / 1000, 1)} s, ${OPEN_BATCH} at a time.`,
      },
      {
        name: `change reaches all ${STREAMS.toLocaleString('en-US')} streams`,
        value: round(Math.max(...arrivals), 1),
        unit: 'ms',
        target: '≤ 500',
        note: `From sending POST /simulate {"event":"paid"} (its durable commit included) to the last stream holding the paid snapshot; first stream ${round(Math.min(...arrivals), 1)} ms, median ${round(percentile(arrivals, 50), 1)} ms; the simulate call answered after ${round(answeredMs, 1)} ms.${missed ? ` ${missed} streams never got it within 30 s.` : ''}`,
      },
    ];
  } finally {
    for (const w of watchers) w.req.destroy();
  }
}

async function measureSingleSubscriber(server: Server): Promise<BenchRow> {
  log(`one subscriber, ${LATENCY_CHANGES} changes`);
  const invoices: Array<{ id: string }> = [];
  for (let i = 0; i < LATENCY_CHANGES; i++) invoices.push(await api(server, '/v1/invoices', { amount_sats: 10_000 }));
  const latencies: number[] = [];
  for (const inv of invoices) {
    const abort = new AbortController();
    const res = await fetch(`${server.url}/pay/invoices/${inv.id}/events`, { signal: abort.signal });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    await readUntil(reader, '"status":"pending"');
    const start = performance.now();
    const arrived = readUntil(reader, '"amount_received_sats":10000');
    await api(server, `/v1/invoices/${inv.id}/simulate`, { event: 'payment_detected' });
    latencies.push((await arrived) - start);
    abort.abort();
  }
  return {
    name: 'one subscriber, change to event p99',
    value: round(percentile(latencies, 99), 2),
    unit: 'ms',
    target: '≤ 20',
    note: `${LATENCY_CHANGES} changes (simulate payment_detected), each on a fresh invoice with one SSE subscriber, timed from sending the request (durable commit included) to the event at the client; p50 ${round(percentile(latencies, 50), 2)} ms, max ${round(Math.max(...latencies), 2)} ms.`,
  };
}

function measureGets(url: string): Promise<WrkResult> {
  return runWrkWarm(url, { connections: GET_CONNECTIONS, durationS: GET_SECONDS }, 2);
}

async function measureSnapshotGets(server: Server): Promise<BenchRow[]> {
  const inv = await api(server, '/v1/invoices', { amount_sats: 10_000 });
  log(`GET /pay/invoices/:id with wrk, ${GET_CONNECTIONS} connections, ${GET_SECONDS} s`);
  const run = await measureGets(`${server.url}/pay/invoices/${inv.id}`);
  log('node:http GET ceiling');
  const ceiling = await startBenchServer('scripts/bench/node-get-server.ts', '/');
  let nodeGet: WrkResult;
  try {
    nodeGet = await measureGets(`${ceiling.url}/pay/invoices/x`);
  } finally {
    await ceiling.child.stop();
  }
  const issues = (r: WrkResult) => `${r.non2xx ? `, ${r.non2xx} non-2xx` : ''}${r.socketErrors ? `, ${r.socketErrors}` : ''}`;
  const row: BenchRow = {
    name: 'GET /pay/invoices/:id',
    value: Math.round(run.requestsPerSec),
    unit: 'req/s',
    target: '≥ 20000',
    note: `wrk -t1 -c${GET_CONNECTIONS} -d${GET_SECONDS}s after a 2 s warm-up, answered by the direct GET (docs/DECISIONS.md) from the snapshot cache; p50 ${round(run.p50Ms, 2)} ms, p99 ${round(run.p99Ms, 2)} ms${issues(run)}.`,
  };
  return [
    explainMiss(row, `${nodeGet.requestsPerSec < 20_000 ? `Node's own HTTP server did ${Math.round(nodeGet.requestsPerSec)} GETs/s in this run; ` : ''}beyond Node's request and response, an answer costs a cache lookup, the request id and the log line (see the ratio).`),
    {
      name: 'bare node:http GET (ceiling)',
      value: Math.round(nodeGet.requestsPerSec),
      unit: 'req/s',
      note: `scripts/bench/node-get-server.ts (Node's HTTP server, a fixed 720-byte JSON body and a request id, nothing else), same wrk settings, right after; p99 ${round(nodeGet.p99Ms, 2)} ms${issues(nodeGet)}.`,
    },
    { name: 'GET /pay / node:http GET', value: round(run.requestsPerSec / nodeGet.requestsPerSec, 2), unit: 'ratio' },
  ];
}

export async function runCheckoutBench(): Promise<BenchRow[]> {
  const needed = STREAMS + 512;
  const limit = openFilesLimit();
  if (limit < needed) {
    throw new Error(`${STREAMS} streams need about ${needed} open files in this process and in the server; ulimit -n is ${limit}. Raise it (ulimit -n ${needed}) or set CHECKOUT_BENCH_STREAMS lower.`);
  }
  const dir = makeTempDir('till-bench-checkout-');
  let server: Server | null = null;
  try {
    server = await startServer(dir.path);
    const held = await measureHeldStreams(server);
    const single = await measureSingleSubscriber(server);
    const gets = await measureSnapshotGets(server);
    return [...held, single, ...gets];
  } finally {
    await server?.child.stop();
    dir.remove();
  }
}

if (import.meta.main) printResults('checkout', await runCheckoutBench());
