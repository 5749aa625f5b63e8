// Shared by the invoice API integration suites: error-envelope checks and the
// database counts that prove a refused request wrote nothing.
import assert from 'node:assert/strict';
import { after, before, type TestContext } from 'node:test';
import { call, startTestTill, type TestTill, type TestTillOptions } from '../../helpers/till-server.ts';

export type ApiResult = Awaited<ReturnType<typeof call>>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** POST /v1/invoices with a JSON body and the given key. */
export function postInvoice(till: TestTill, key: string, body: unknown, headers: Record<string, string> = {}): Promise<ApiResult> {
  return call(till, 'POST', '/v1/invoices', { key, body, headers });
}

/** The response carries X-Request-Id, a UUID; an error body repeats it. */
export function assertRequestId(res: ApiResult): string {
  const id = res.headers.get('x-request-id');
  assert.match(id ?? '', UUID, 'X-Request-Id is a UUID');
  return id!;
}

/**
 * The spec's error envelope with this status and code, request_id equal to the
 * X-Request-Id header; `param`, when given, is what error.param names.
 */
export function assertError(res: ApiResult, status: number, code: string, param?: string): Record<string, unknown> {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text.slice(0, 300)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const error = res.body?.error;
  assert.equal(typeof error, 'object', `error envelope: ${res.text.slice(0, 300)}`);
  assert.equal(error.code, code);
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  assert.equal(error.request_id, assertRequestId(res));
  assert.equal(res.headers.get('cache-control'), 'no-store', 'an error answer is kept by no cache');
  // A 503 says when to retry: its own wait, else the spec's first backoff step (7.3).
  if (status === 503) assert.equal(res.headers.get('retry-after'), String(error.retry_after_seconds ?? 1), 'Retry-After of a 503');
  if (param !== undefined) {
    assert.equal(error.param, param);
    assert.ok(error.message.includes(param), `message names ${param}: ${error.message}`);
  }
  return error;
}

/** A success with this status whose body is an invoice, with X-Request-Id. */
export function assertInvoice(res: ApiResult, status = 201): Record<string, any> {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
  assertRequestId(res);
  assert.equal(res.body.object, 'invoice');
  assert.match(res.body.id, /^inv_/);
  return res.body;
}

export interface WriteCounts {
  invoices: number;
  events: number;
  idempotencyKeys: number;
  /** Sum of every xpub's next_index: an index handed out shows here. */
  indexesHandedOut: number;
}

/** What a request could have written; equal before and after means it wrote nothing. */
export function countWrites(till: TestTill): WriteCounts {
  const { db } = till.rt.ctx;
  const n = (sql: string) => (db.prepare(sql).get() as { n: number | null }).n ?? 0;
  return {
    invoices: n('SELECT COUNT(*) AS n FROM invoices'),
    events: n('SELECT COUNT(*) AS n FROM events'),
    idempotencyKeys: n('SELECT COUNT(*) AS n FROM idempotency_keys'),
    indexesHandedOut: n('SELECT SUM(next_index) AS n FROM xpubs'),
  };
}

/** Runs fn and asserts it wrote nothing to the database. */
export async function assertWritesNothing<T>(till: TestTill, fn: () => Promise<T>): Promise<T> {
  const before = countWrites(till);
  const result = await fn();
  assert.deepEqual(countWrites(till), before, 'a refused request wrote nothing');
  return result;
}

/** The active xpub's next_index of a store's environment. */
export function nextIndex(till: TestTill, storeId: string, env: 'live' | 'test'): number {
  const xpub = till.rt.ctx.repos.xpubs.findActive(storeId, env);
  assert.ok(xpub, `store ${storeId} has an active ${env} xpub`);
  return xpub.nextIndex;
}

/**
 * One Till shared by the tests of the enclosing describe(): started before the
 * first, stopped after the last (startTestTill's cleanups run in reverse).
 */
export function useTill(opts: TestTillOptions = {}): () => TestTill {
  let till: TestTill | undefined;
  const cleanups: Array<() => unknown> = [];
  const scope = { after: (fn: () => unknown) => cleanups.push(fn) } as unknown as TestContext;
  before(async () => {
    till = await startTestTill(scope, opts);
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return () => {
    assert.ok(till, 'the shared Till has started');
    return till;
  };
}
