import type { TestContext } from 'node:test';
import { Bitcoind } from '../../../src/bitcoin/bitcoind.ts';
import { ManualClock } from '../../../src/clock.ts';
import { loadConfig } from '../../../src/config.ts';
import { silentLogger, type Logger } from '../../../src/log.ts';
import { createRuntime, type Runtime } from '../../../src/runtime.ts';
import { call, setupStore, startTestTill, type TestStore, type TestTill } from '../../helpers/till-server.ts';
import type { ChainNode } from './nodes.ts';
import { waitFor } from '../../helpers/wait-for.ts';

export type NodeFactory = (clock: ManualClock) => Promise<ChainNode>;

export interface ChainFixture {
  node: ChainNode;
  till: TestTill;
  store: TestStore;
}

/** The env that points a Till at a node. */
export function nodeEnv(node: Pick<ChainNode, 'rpcUrl' | 'cookieFile' | 'zmqEndpoint'>): Record<string, string> {
  return { TILL_BITCOIND: 'true', TILL_RPC_URL: node.rpcUrl, TILL_RPC_COOKIE_FILE: node.cookieFile, TILL_ZMQ: node.zmqEndpoint };
}

/** A second Till runtime on the fixture's data dir, node and clock (after the first was stopped); not started. */
export function restartTill(t: TestContext, f: ChainFixture, opts: { logger?: Logger } = {}): Runtime {
  const rt = createRuntime(loadConfig({ env: { TILL_DATA_DIR: f.till.config.dataDir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000', ...nodeEnv(f.node) } }), { clock: f.till.clock, logger: opts.logger ?? silentLogger });
  t.after(() => rt.stop());
  return rt;
}

/** A Till restarted on the fixture's data dir, once its first catch-up is done. */
export async function restartAndCatchUp(t: TestContext, f: ChainFixture): Promise<Runtime> {
  const rt = restartTill(t, f);
  rt.chain!.start();
  await rt.chain!.idle();
  return rt;
}

/** A node and a Till watching it (a live store on regtest), on one clock, synced. */
export async function startChainFixture(t: TestContext, makeNode: NodeFactory, opts: { confirmations?: number; logger?: Logger } = {}): Promise<ChainFixture> {
  const clock = new ManualClock(Date.now());
  const node = await makeNode(clock);
  t.after(() => node.stop());
  // An explicit undefined would replace startTestTill's silent logger with the default one (lines on stdout).
  const till = await startTestTill(t, { clock, env: nodeEnv(node), chainResyncMs: 3_600_000, ...(opts.logger ? { logger: opts.logger } : {}) });
  const store = setupStore(till, { mode: 'live', confirmations: opts.confirmations ?? 1 });
  await startWatching(till, node);
  return { node, till, store };
}

export async function startWatching(till: TestTill, node: ChainNode): Promise<void> {
  till.rt.chain!.start();
  await till.rt.chain!.idle();
  try {
    await node.waitForSubscriber();
  } catch (err) {
    // Seen twice in full-suite runs, never alone: say what Till's side saw.
    throw new Error(`${(err as Error).message}; Till's chain health: ${JSON.stringify(till.rt.chain!.health())}`, { cause: err });
  }
}

export async function createInvoice(f: ChainFixture, body: Record<string, unknown> = { amount_sats: 50_000 }): Promise<any> {
  const res = await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body });
  if (res.status !== 201) throw new Error(`invoice creation failed: ${res.text}`);
  return res.body;
}

export async function getInvoice(f: ChainFixture, id: string): Promise<any> {
  return (await call(f.till, 'GET', `/v1/invoices/${id}`, { key: f.store.key })).body;
}

export async function listInvoices(f: ChainFixture): Promise<any> {
  return (await call(f.till, 'GET', '/v1/invoices', { key: f.store.key })).body;
}

export function eventTypes(f: ChainFixture, invoiceId: string): string[] {
  return f.till.rt.ctx.repos.events.listForInvoice(invoiceId).map((e) => e.type);
}

/** Waits until Till has processed the node's tip. */
export async function synced(f: ChainFixture): Promise<void> {
  const { hash } = await f.node.tip();
  await waitFor(() => f.till.rt.ctx.repos.chainBlocks.tip()?.hash === hash, `till at tip ${hash}`);
  await f.till.rt.chain!.idle();
}

export async function mineAndSync(f: ChainFixture, n = 1): Promise<void> {
  await f.node.mine(n);
  await synced(f);
}

/** Till's node drops the transaction from its mempool (evicted: a full mempool) while miners keep it: Till no longer sees it there. */
export function evictFromTillsNode(t: { after(fn: () => void): void }, txid: string): void {
  wrapBitcoind(t, 'inMempool', (original) => async function (this: Bitcoind, txids: string[]) {
    const present = await original.call(this, txids);
    present.delete(txid);
    return present;
  });
  wrapBitcoind(t, 'getRawMempoolTimes', (original) => async function (this: Bitcoind) {
    const times = await original.call(this);
    times.delete(txid);
    return times;
  });
}

/** Replaces a Bitcoind method for the test (every Till of the process); restored after it. */
export function wrapBitcoind<K extends 'getBlockHash' | 'getChainInfo' | 'inMempool' | 'getRawMempoolTimes'>(t: { after(fn: () => void): void }, name: K, wrap: (original: Bitcoind[K]) => Bitcoind[K]): void {
  const original = Bitcoind.prototype[name];
  Bitcoind.prototype[name] = wrap(original);
  t.after(() => {
    Bitcoind.prototype[name] = original;
  });
}
