// A merchant's server creating invoices on a spawned `till serve` as fast as
// it is answered: a few requests in flight per API key, each with its own
// Idempotency-Key and body, every answer kept as it arrived.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Database } from 'better-sqlite3';
import { tillJson } from './cli.ts';
import { startServe, type Serving } from './serve.ts';
import { tempDir } from './temp.ts';

export interface Creation {
  key: string;
  idempotencyKey: string;
  body: string;
}

export interface CreationLoad {
  /** Every creation sent, in the order sent. */
  sent: Creation[];
  /** The answers that arrived, as they arrived. */
  answered: Map<Creation, { status: number; text: string }>;
  /** Sends no more; resolves once no request is in flight (one left without an answer, the server gone, ends its sender). */
  stop(): Promise<void>;
}

/** POST /v1/invoices for `c`, as sent the first time. */
export function postCreation(url: string, c: Creation): Promise<Response> {
  return fetch(`${url}/v1/invoices`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json', 'idempotency-key': c.idempotencyKey },
    body: c.body,
  });
}

/** Creations a key sends at most: Till allows 100 a minute per key, so none of them is ever refused 429. */
const PER_KEY = 90;

/**
 * Keeps `inFlightPerKey` creations in flight on each key, `pauseMs` apart on
 * each sender, until stopped or each key has sent PER_KEY.
 */
export function startCreationLoad(url: string, keys: string[], { inFlightPerKey = 4, pauseMs = 0 } = {}): CreationLoad {
  const sent: Creation[] = [];
  const answered = new Map<Creation, { status: number; text: string }>();
  let stopped = false;
  const sentBy = new Map<string, number>();
  async function send(key: string): Promise<void> {
    while (!stopped && (sentBy.get(key) ?? 0) < PER_KEY) {
      sentBy.set(key, (sentBy.get(key) ?? 0) + 1);
      const n = sent.length;
      const c: Creation = { key, idempotencyKey: `order-${n}`, body: JSON.stringify({ amount_sats: 1000 + n, metadata: { order: String(n) } }) };
      sent.push(c);
      try {
        const res = await postCreation(url, c);
        answered.set(c, { status: res.status, text: await res.text() });
      } catch {
        return;
      }
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
    }
  }
  const senders = Promise.all(keys.flatMap((key) => Array.from({ length: inFlightPerKey }, () => send(key))));
  return {
    sent,
    answered,
    stop: async () => {
      stopped = true;
      await senders;
    },
  };
}

/** `till serve --demo` on a fresh data dir (stopped after the test), with `keyCount` API keys of its demo store: the demo's and more minted by the CLI. */
export async function serveWithKeys(t: TestContext, keyCount: number): Promise<{ dataDir: string; till: Serving; keys: string[] }> {
  const dataDir = tempDir(t);
  const till = await startServe(dataDir);
  t.after(() => till.stop());
  const minted = await Promise.all(Array.from({ length: keyCount - 1 }, () => tillJson<{ key: string }>(['keys', 'mint', '--store', till.storeId, '--env', 'test'], { dataDir })));
  return { dataDir, till, keys: [till.key, ...minted.map((m) => m.key)] };
}

/** What a crash or a backup must never leave: a database SQLite finds damaged, or an invoice without its one invoice.created event. */
export function assertNothingHalfWritten(db: Database): void {
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
  const withoutOneCreatedEvent = db
    .prepare("SELECT count(*) FROM invoices i WHERE (SELECT count(*) FROM events e WHERE e.invoice_id = i.id AND e.type = 'invoice.created') != 1")
    .pluck()
    .get();
  assert.equal(withoutOneCreatedEvent, 0, 'each invoice was written with its invoice.created event');
}
