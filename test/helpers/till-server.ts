import type { TestContext } from 'node:test';
import type { H3 } from 'h3';
import { ManualClock } from '../../src/clock.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createApp } from '../../src/http/app.ts';
import type { ConnectionDeadlines } from '../../src/http/internal/connection-deadlines.ts';
import { createRequestLog } from '../../src/http/middleware/request-context.ts';
import { listen } from '../../src/http/server.ts';
import { silentLogger } from '../../src/log.ts';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime.ts';
import { mintApiKey } from '../../src/services/api-keys.ts';
import { createStore, updateStore } from '../../src/services/stores.ts';
import { addXpub } from '../../src/services/xpubs.ts';
import { testTpub } from './keys.ts';
import { tempDir } from './temp.ts';

export type Transport = 'in-process' | 'socket';
export const TRANSPORTS: Transport[] = ['in-process', 'socket'];

export interface TestTill {
  rt: Runtime;
  app: H3;
  clock: ManualClock;
  config: Config;
  /** http://127.0.0.1:port of the real socket. */
  url: string;
  /** Sends a request through the chosen transport: app.request or fetch over the socket. */
  request(path: string, init?: RequestInit): Promise<Response>;
}

export interface TestTillOptions extends RuntimeOptions {
  transport?: Transport;
  env?: Record<string, string>;
  /** Start background loops (expiry, rates, pools). Off by default: tests drive them. */
  startWorkers?: boolean;
  /** Start the db thread alone (startWorkers starts it too), as `till serve` runs. */
  dbThread?: boolean;
  /**
   * Without bitcoind (the default here) Till makes test invoices only. Unless
   * this is false, the till acts as one whose node has caught up, so the API's
   * tests can make live invoices; the chain's tests run a real watcher.
   */
  chainWatched?: boolean;
  /** How long a client has to send its request (listen()'s defaults unless given). */
  deadlines?: ConnectionDeadlines;
}

export async function startTestTill(t: TestContext, opts: TestTillOptions = {}): Promise<TestTill> {
  // One hook: the till stops, then its data dir goes (node:test runs after-hooks in the order they were added).
  let removeDataDir = (): unknown => undefined;
  let stop = async (): Promise<void> => {};
  t.after(async () => {
    await stop();
    removeDataDir();
  });
  const dataDir = tempDir({ after: (fn: () => void) => (removeDataDir = fn) });
  const config = loadConfig({
    env: { TILL_DATA_DIR: dataDir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000', TILL_PORT: '0', TILL_MIN_FREE_DISK_MB: '0', TILL_BITCOIND: 'false', ...opts.env },
  });
  const clock = (opts.clock as ManualClock | undefined) ?? new ManualClock();
  const rt = createRuntime(config, { logger: silentLogger, ...opts, clock });
  if (opts.chainWatched !== false) rt.ctx.chain.watched = true;
  const app = createApp(rt);
  const server = await listen(app, '127.0.0.1', 0, { log: createRequestLog(rt.logger), deadlines: opts.deadlines });
  rt.ctx.baseUrl = server.url;
  if (opts.startWorkers) rt.start();
  else if (opts.dbThread) rt.startDbThread();
  stop = async () => {
    await server.close();
    await rt.stop();
  };
  const transport = opts.transport ?? 'socket';
  return {
    rt,
    app,
    clock,
    config,
    url: server.url,
    request: (path, init) => (transport === 'socket' ? fetch(server.url + path, init) : Promise.resolve(app.request(path, init))),
  };
}

export interface TestStore {
  storeId: string;
  key: string;
  keyId: string;
}

/** A store with an active xpub for its mode and an API key of that mode. */
export function setupStore(till: TestTill, opts: { mode?: 'live' | 'test'; xpub?: string | null; confirmations?: number; label?: string } = {}): TestStore {
  const { ctx } = till.rt;
  const mode = opts.mode ?? 'test';
  const { store } = createStore(ctx, { name: 'Shop', mode });
  if (opts.confirmations !== undefined) updateStore(ctx, store.id, { confirmationsRequired: opts.confirmations });
  if (opts.xpub !== null) addXpub(ctx, { storeId: store.id, env: mode, key: opts.xpub ?? testTpub(opts.label ?? store.id) });
  const { key, record } = mintApiKey(ctx, store.id, mode);
  return { storeId: store.id, key, keyId: record.id };
}

/** JSON request helper: method, path, body and bearer key. */
export async function call(
  till: TestTill,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any; headers: Headers; text: string }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await till.request(path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, headers: res.headers, text };
}
