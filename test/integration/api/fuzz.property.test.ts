import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { mintApiKey, revokeApiKey } from '../../../src/services/api-keys.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { doc, headerProblemsOf, problemsOf } from '../../helpers/openapi-schema.ts';
import { rawExchange, type RawAnswer } from '../../helpers/raw-http.ts';
import { Rng } from '../../helpers/rng.ts';
import { call, setupStore, startTestTill, type TestTill } from '../../helpers/till-server.ts';
import { generateRequest, MUTATION_KINDS, serializeRequest, type FuzzRequest, type FuzzWorld } from './fuzz-requests.ts';

// Seeded requests against every route over a real socket (generator:
// fuzz-requests.ts): valid ones mutated in their method, path, query,
// headers, JSON body and framing. After every answer: no 5xx; a 4xx is the
// error envelope with X-Request-Id's id and a code the OpenAPI document lists
// for that route (or for every route); a success has the documented shape; a
// refused request, or any read, changed nothing in the database; the till
// still answers; nothing was logged at error level.
//
// A fresh till per seed, so a seed replays alone. FUZZ_SEEDS seeds (default 20)
// from FUZZ_SEED0 (default 1), FUZZ_REQUESTS requests each (default 50):
//   FUZZ_SEEDS=200 node --test test/integration/api/fuzz.property.test.ts
// and replay seed 20 alone with FUZZ_SEED0=20 FUZZ_SEEDS=1.

const SEEDS = Array.from({ length: Number(process.env.FUZZ_SEEDS ?? 20) }, (_, i) => i + Number(process.env.FUZZ_SEED0 ?? 1));
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 50);
/** Mutation kinds applied and routes asked: a generator that stopped reaching one is noticed. */
const STATS: Record<string, number> = {};
const count = (k: string) => (STATS[k] = (STATS[k] ?? 0) + 1);

type Operation = { responses: Record<string, { content?: Record<string, { schema: object }>; headers?: Record<string, object>; 'x-error-codes'?: string[] }> };
const PATHS = doc.paths as Record<string, Record<string, Operation>>;
const COMMON = doc['x-common-errors'] as Record<string, { 'x-error-codes': string[] }>;
// A trailing slash is answered on the path without it (a redirect for the pages: /checkout, /checkout/{id}/).
const TEMPLATES = Object.keys(PATHS).map((t) => ({ t, re: new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+').replace(/\/$/, '')}/?$`) }));

/** The path of a request-target (an absolute-form one too). */
const pathOf = (target: string) => target.replace(/^https?:\/\/[^/]+/, '').split(/[?#]/, 1)[0]!;

/** The documented paths a request-target may be routed to: as sent, or with its escapes decoded. */
function templatesOf(target: string): string[] {
  const path = pathOf(target);
  const forms = [path];
  try {
    forms.push(decodeURIComponent(path));
  } catch {
    // A malformed escape is routed as sent.
  }
  return TEMPLATES.filter(({ re }) => forms.some((p) => re.test(p))).map(({ t }) => t);
}

/** The operations the request's method and path may name (HEAD is answered as GET). */
function operationsOf(req: FuzzRequest): Array<[string, Operation]> {
  const method = req.method === 'HEAD' ? 'get' : req.method.toLowerCase();
  return templatesOf(req.path).flatMap((t) => (PATHS[t]![method] ? [[t, PATHS[t]![method]!] as [string, Operation]] : []));
}

/** Every row Till keeps about invoices, payments, events, idempotency and webhooks, hashed. */
function digestOf(till: TestTill): string {
  const hash = createHash('sha256');
  const tables = ['stores', 'api_keys', 'xpubs', 'invoices', 'payments', 'events', 'idempotency_keys', 'webhook_endpoints', 'webhook_deliveries', 'webhook_attempts'];
  for (const table of tables) {
    const rows = till.rt.ctx.db.prepare(`SELECT * FROM ${table}`).all().map((row) => JSON.stringify(row, (_, v) => (v?.type === 'Buffer' ? Buffer.from(v).toString('hex') : v)));
    hash.update(`${table}:${rows.sort().join('\n')}`);
  }
  return hash.digest('hex');
}

const one = (a: RawAnswer, name: string) => a.headers.get(name)?.[0];

/** What is wrong with one answer to `req`: [] when nothing. */
function problemsOfAnswer(req: FuzzRequest, a: RawAnswer): string[] {
  const problems: string[] = [];
  const ops = operationsOf(req);
  const status = String(a.status);
  if (a.status >= 500) problems.push(`status ${a.status}`);
  const underPay = pathOf(req.path).startsWith('/pay/');
  if (underPay && one(a, 'access-control-allow-origin') !== '*') problems.push('no Access-Control-Allow-Origin: * under /pay/');
  const isJson = (one(a, 'content-type') ?? '').startsWith('application/json');
  if (!one(a, 'x-request-id')) problems.push('no X-Request-Id');
  // A HEAD answer has no body to check.
  if (req.method === 'HEAD') return problems;
  if (a.status >= 400) {
    // The HTML pages' 404 (documented without codes) is the one error answer that is not the envelope.
    if (!isJson && ops.some(([, op]) => op.responses[status] && !op.responses[status]!['x-error-codes'])) return problems;
    let body: any;
    try {
      body = JSON.parse(a.body.toString('utf8'));
    } catch {
      return [...problems, `${a.status} is not JSON: ${a.body.toString('latin1').slice(0, 120)}`];
    }
    const e = body?.error;
    if (!e || typeof e.code !== 'string' || typeof e.message !== 'string' || typeof e.request_id !== 'string') problems.push(`not the error envelope: ${JSON.stringify(body).slice(0, 200)}`);
    else {
      if (e.request_id !== one(a, 'x-request-id')) problems.push(`request_id ${e.request_id} is not X-Request-Id ${one(a, 'x-request-id')}`);
      const documented = [...(COMMON[status]?.['x-error-codes'] ?? []), ...ops.flatMap(([, op]) => op.responses[status]?.['x-error-codes'] ?? [])];
      if (!documented.includes(e.code)) problems.push(`${a.status} ${e.code} is not documented for ${req.method} ${ops.map(([t]) => t).join(' | ') || '(no route)'}: ${e.message}`);
    }
    return problems;
  }
  // A CORS preflight (docs/CHECKOUT.md) is HTTP's, outside the document.
  if (req.method === 'OPTIONS' && underPay && a.status === 204) return problems;
  const documented = ops.map(([, op]) => op.responses[status]).filter((r) => r !== undefined);
  if (documented.length === 0) return [...problems, `${a.status} is not documented for ${req.method} ${ops.map(([t]) => t).join(' | ') || '(no route)'}`];
  const schema = documented[0]!.content?.['application/json']?.schema;
  const headers = new Headers([...a.headers].map(([n, vs]) => [n, vs.join(', ')] as [string, string]));
  problems.push(...headerProblemsOf((documented[0]!.headers ?? {}) as Record<string, object>, headers));
  if (schema) {
    try {
      problems.push(...problemsOf(schema, JSON.parse(a.body.toString('utf8'))));
    } catch {
      problems.push(`${a.status} is not JSON`);
    }
  }
  return problems;
}

/** A till with two test stores, a live one, keys refused in each way, invoices and webhook endpoints. */
async function startWorld(t: Parameters<typeof startTestTill>[0]) {
  const log = capturedLogger('info');
  // Short deadlines: a request whose body never comes (a Content-Length too long) is answered soon.
  const till = await startTestTill(t, { logger: log.logger, deadlines: { headersMs: 1000, requestMs: 1000 } });
  const { ctx } = till.rt;
  ctx.config.allowPrivateCallbacks = true;
  const main = setupStore(till);
  const other = setupStore(till);
  const live = setupStore(till, { mode: 'live' });
  const revoked = mintApiKey(ctx, main.storeId, 'test');
  revokeApiKey(ctx, revoked.record.id);
  const post = async (key: string, path: string, body: object) => {
    const res = await call(till, 'POST', path, { key, body });
    assert.ok(res.status < 300, res.text);
    return res.body.id as string;
  };
  const invoiceIds = [];
  for (let i = 0; i < 4; i++) invoiceIds.push(await post(main.key, '/v1/invoices', { amount_sats: 1000 + i }));
  const hooks = `/v1/stores/${main.storeId}/webhooks`;
  const endpointIds = [await post(main.key, hooks, { url: 'http://127.0.0.1:9/a' }), await post(main.key, hooks, { url: 'http://127.0.0.1:9/b' })];
  const deletedEndpointId = await post(main.key, hooks, { url: 'http://127.0.0.1:9/c' });
  assert.equal((await call(till, 'DELETE', `${hooks}/${deletedEndpointId}`, { key: main.key })).status, 200);
  const world: FuzzWorld = {
    storeId: main.storeId,
    key: main.key,
    otherKey: other.key,
    revokedKey: revoked.key,
    wrongEnvKey: mintApiKey(ctx, main.storeId, 'live').key,
    liveKey: live.key,
    otherStoreId: other.storeId,
    invoiceIds,
    otherInvoiceId: await post(other.key, '/v1/invoices', { amount_sats: 1000 }),
    liveInvoiceId: await post(live.key, '/v1/invoices', { amount_sats: 1000 }),
    endpointIds,
    deletedEndpointId,
    otherEndpointId: await post(other.key, `/v1/stores/${other.storeId}/webhooks`, { url: 'http://127.0.0.1:9/d' }),
  };
  return { till, world, lines: log.lines };
}

const WRITES = new Set(['POST', 'DELETE']);

async function runSeed(t: Parameters<typeof startTestTill>[0], seed: number): Promise<void> {
  const { till, world, lines } = await startWorld(t);
  const rng = new Rng(seed);
  const host = new URL(till.url).host;
  for (let n = 0; n < REQUESTS; n++) {
    const req = generateRequest(rng, world);
    for (const tag of req.tags) count(tag);
    const bytes = serializeRequest(req, host);
    assert.ok(!bytes.includes('\u0001fuzz'), 'the generator put every odd value in');
    const before = digestOf(till);
    const loggedBefore = lines.length;
    const { answers, closed } = await rawExchange(till.url, bytes, { head: req.method === 'HEAD', end: req.end });
    const problems = answers.flatMap((a) => problemsOfAnswer(req, a));
    // Only a client that hung up before its body was in may go unanswered.
    if (answers.length === 0 && !req.end) problems.push(closed ? 'closed without an answer' : 'no answer');
    const wrote = WRITES.has(req.method) && answers.some((a) => a.status < 300);
    if (!wrote && digestOf(till) !== before) problems.push(`the database changed (answers ${answers.map((a) => a.status).join(', ') || 'none'})`);
    const fresh = await call(till, 'GET', `/v1/invoices/${world.invoiceIds[0]}`, { key: world.key });
    if (fresh.status !== 200) problems.push(`a valid request afterwards answered ${fresh.status}`);
    problems.push(...lines.slice(loggedBefore).filter((l) => l.level >= 50).map((l) => `logged at error level: ${l.msg} ${JSON.stringify(l.err ?? '').slice(0, 300)}`));
    for (const [template] of operationsOf(req)) count(`${req.method === 'HEAD' ? 'GET' : req.method} ${template}`);
    assert.deepEqual(problems, [], `seed ${seed} request ${n} (${req.tags.join(', ') || 'no mutation'}):\n${JSON.stringify(bytes.toString('latin1').slice(0, 1500))}\nanswers: ${answers.map((a) => `${a.status} ${a.body.toString('utf8').slice(0, 300)}`).join(' / ')}`);
    // Later requests may name what this one made.
    const made = answers.find((a) => a.status === 201 && req.method === 'POST');
    if (made) {
      const id = (JSON.parse(made.body.toString('utf8')) as { id?: string }).id ?? '';
      if (id.startsWith('inv_')) world.invoiceIds.push(id);
      if (id.startsWith('we_')) world.endpointIds.push(id);
    }
  }
}

describe('the HTTP API under generated requests: no 5xx, the documented envelope and codes, nothing written when refused', () => {
  test(`${SEEDS.length} seeds of ${REQUESTS} requests`, async (t) => {
    for (const seed of SEEDS) await t.test(`seed ${seed}`, (st) => runSeed(st, seed));
    // Fewer seeds than the default (a replay) need not reach everything.
    if (SEEDS.length < 20) return;
    // The invariants are only checked where the requests go: every kind of mutation, and every route of the document.
    const routes = Object.entries(PATHS).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const wanted = [...MUTATION_KINDS, ...routes];
    assert.deepEqual(wanted.filter((k) => !STATS[k]), [], `not reached: ${JSON.stringify(STATS)}`);
  });
});
