// Runs one soak sequence: a fake bitcoind and one Till, restarted on the same
// data dir, on one ManualClock. Each step acts on the node (and Till), feeds
// the oracle what Till is documented to judge, waits for Till to settle and
// compares the two (compare.ts).
import type { TestContext } from 'node:test';
import { ManualClock } from '../../../../src/clock.ts';
import { readCookieFile, RpcClient } from '../../../../src/bitcoin/rpc-client.ts';
import { createApp } from '../../../../src/http/app.ts';
import { expireDueInvoices } from '../../../../src/services/invoices.ts';
import { updateStore } from '../../../../src/services/stores.ts';
import type { FakeBitcoind } from '../../../fakes/bitcoind/index.ts';
import { capturedLogger } from '../../../helpers/captured-log.ts';
import { call, setupStore, startTestTill, type TestStore, type TestTill } from '../../../helpers/till-server.ts';
import { nodeEnv, restartTill, startWatching, type ChainFixture } from '../helpers.ts';
import { startFakeNode } from '../nodes.ts';
import { compareWithOracle, type ApiStore } from './compare.ts';
import { Oracle, snapOf, type BlockInfo, type OInv, type OTx } from './oracle.ts';
import { Rng } from '../../../helpers/rng.ts';
import { generateStores, MIN, StepGenerator, type Outs, type SoakScript, type Step, type World } from './steps.ts';

export interface SoakResult {
  seed: number;
  ok: boolean;
  /** The steps run, the failing one last: what a replay needs. */
  script: SoakScript;
  trace: string[];
  failure?: string;
  /** Webhook event counts of the oracle's invoices: what the sequence exercised. */
  events: Record<string, number>;
}

/** Runs the script given, or `steps` generated from the seed. */
export async function runSoak(t: TestContext, seed: number, opts: { steps: number; script?: SoakScript }): Promise<SoakResult> {
  const rng = new Rng(seed);
  const script: SoakScript = { stores: opts.script?.stores ?? generateStores(rng), steps: [] };
  const generator = opts.script ? null : new StepGenerator(rng);
  const soak = await Soak.start(t, seed, script.stores);
  const count = opts.script ? opts.script.steps.length : opts.steps;
  let failure: string | undefined;
  for (let n = 0; n < count && !failure; n++) {
    // The last generated step starts Till if it is down, so every sequence ends compared.
    const step = opts.script?.steps[n] ?? (n === count - 1 && !soak.running ? { op: 'start' as const } : generator!.next(await soak.world()));
    script.steps.push(step);
    failure = await soak.run(n, step);
  }
  return { seed, ok: !failure, script, trace: soak.trace, failure, events: soak.eventCounts() };
}

/** The node as the oracle needs it: blocks by height (cached by hash), the mempool, transactions. */
class NodeReader {
  readonly #rpc: RpcClient;
  readonly #blocks = new Map<string, BlockInfo>();
  readonly fake: FakeBitcoind;

  constructor(fake: FakeBitcoind) {
    this.fake = fake;
    this.#rpc = new RpcClient({ url: fake.rpcUrl, credentials: () => readCookieFile(fake.cookieFile) });
  }

  async chain(fromHeight: number): Promise<{ tip: number; blocks: Map<number, BlockInfo> }> {
    const tip = this.fake.tipHeight;
    const blocks = new Map<number, BlockInfo>();
    for (let h = fromHeight; h <= tip; h++) blocks.set(h, await this.#block(h));
    return { tip, blocks };
  }

  async #block(height: number): Promise<BlockInfo> {
    const hash = (await this.#rpc.call('getblockhash', [height])) as string;
    let b = this.#blocks.get(hash);
    if (!b) {
      const raw = (await this.#rpc.call('getblock', [hash, 1])) as { time: number; tx: string[] };
      b = { height, hash, time: raw.time * 1000, txids: raw.tx.slice(1) };
      this.#blocks.set(hash, b);
    }
    return b;
  }

  /** Unconfirmed txids with their entry times (ms). */
  async mempool(): Promise<Map<string, number>> {
    const raw = (await this.#rpc.call('getrawmempool', [true])) as Record<string, { time: number }>;
    return new Map(Object.entries(raw).map(([txid, e]) => [txid, e.time * 1000]));
  }

  async tx(txid: string): Promise<OTx> {
    const raw = (await this.#rpc.call('getrawtransaction', [txid, true])) as {
      vin: Array<{ txid: string; vout: number }>;
      vout: Array<{ n: number; value: number; scriptPubKey: { address: string } }>;
    };
    return {
      txid,
      inputs: raw.vin.map((i) => `${i.txid}:${i.vout}`),
      outs: raw.vout.map((o) => ({ vout: o.n, address: o.scriptPubKey.address, sats: Math.round(o.value * 1e8) })),
    };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Soak {
  readonly trace: string[] = [];
  readonly oracle = new Oracle();
  readonly #t: TestContext;
  readonly #fixture: ChainFixture;
  readonly #node: NodeReader;
  readonly #stores: ApiStore[];
  readonly #clock: ManualClock;
  readonly #start: number;
  /** Blocks below this height were mined before the sequence: never reorged. */
  readonly #baseHeight: number;
  /** Till's logged errors; any fails the sequence. */
  readonly #errors: Array<Record<string, unknown>>;
  /** Script name -> txid. */
  readonly #txids = new Map<string, string>();
  #till: TestTill | null;

  private constructor(t: TestContext, fixture: ChainFixture, stores: ApiStore[], errors: Array<Record<string, unknown>>) {
    this.#t = t;
    this.#fixture = fixture;
    this.#node = new NodeReader(fixture.node.fake!);
    this.#stores = stores;
    this.#clock = fixture.till.clock;
    this.#start = this.#clock.now();
    this.#baseHeight = this.#node.fake.tipHeight;
    this.#errors = errors;
    this.#till = fixture.till;
  }

  static async start(t: TestContext, seed: number, stores: SoakScript['stores']): Promise<Soak> {
    const clock = new ManualClock();
    const node = await startFakeNode(clock);
    t.after(() => node.stop());
    const { logger, lines } = capturedLogger('error');
    const till = await startTestTill(t, { clock, env: nodeEnv(node), chainResyncMs: 3_600_000, logger });
    const apiStores = stores.map((s, i) => ({ ...setupLiveStore(till, `soak-${seed}-${i}`, s.req, s.lateMin), req: s.req, lateMs: s.lateMin * MIN }));
    const soak = new Soak(t, { node, till, store: apiStores[0]! }, apiStores, lines);
    await soak.#watch(till);
    for (const [h, b] of (await soak.#node.chain(soak.#baseHeight)).blocks) soak.oracle.tillChain.set(h, b.hash);
    return soak;
  }

  get running(): boolean {
    return this.#till !== null;
  }

  async world(): Promise<World> {
    const mempool = await this.#node.mempool();
    const chain = await this.#node.chain(this.#baseHeight + 1);
    const nameOf = (txid: string) => this.#nameOf(txid);
    return {
      now: this.#clock.now(),
      running: this.running,
      invoices: this.oracle.invoices,
      mempoolPayTxs: [...this.#txids].filter(([, txid]) => mempool.has(txid) && this.#paysAnInvoice(txid)).map(([name]) => name),
      tipTxs: (depth) => {
        if (chain.tip <= this.#baseHeight + 2) return null;
        const txids: string[] = [];
        for (let h = chain.tip - depth + 1; h <= chain.tip; h++) txids.push(...(chain.blocks.get(h)?.txids ?? []));
        return txids.filter((txid) => this.#nameOf(txid) !== txid).map(nameOf);
      },
      outsOf: (name) => this.#outsOf(name),
    };
  }

  /** Runs one step; a failure's description, or undefined. */
  async run(n: number, step: Step): Promise<string | undefined> {
    this.trace.push(`#${n} ${this.running ? 'up' : 'DOWN'} t+${((this.#clock.now() - this.#start) / MIN).toFixed(1)}min ${JSON.stringify(step)}`);
    const logFrom = this.oracle.log.length;
    const outcome = await this.#apply(step);
    if (outcome === 'skipped') this.trace.push('  (skipped)');
    for (const line of this.oracle.log.slice(logFrom)) this.trace.push(`  oracle: ${line}`);
    const diffs = outcome === 'done' || outcome === 'skipped' ? [] : [outcome];
    if (this.#till) diffs.push(...(await this.#settleAndCompare(this.#till)));
    if (this.#errors.length) diffs.push(`Till logged errors: ${this.#errors.map((l) => JSON.stringify(l)).join('\n')}`);
    return diffs.length ? diffs.join('\n') : undefined;
  }

  eventCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const e of this.oracle.invoices.flatMap((i) => i.events)) counts[e.replace('invoice.', '')] = (counts[e.replace('invoice.', '')] ?? 0) + 1;
    return counts;
  }

  /** 'done', 'skipped' (the step does not apply now), or a mismatch found while applying it. */
  async #apply(step: Step): Promise<'done' | 'skipped' | string> {
    switch (step.op) {
      case 'create':
        return this.#create(step);
      case 'pay':
        return this.#pay(step.tx, step.outs);
      case 'replace':
        return this.#replace(step);
      case 'mine':
        return this.#mine(step.n, step.only);
      case 'reorg':
        return this.#reorg(step);
      case 'advance':
        return this.#advance(step.ms);
      case 'stop':
        return this.#stop();
      case 'start':
        return this.#restart();
      case 'cancel':
        return this.#cancel(step.inv);
    }
  }

  async #create(step: Extract<Step, { op: 'create' }>): Promise<'done' | 'skipped'> {
    if (!this.#till) return 'skipped';
    const store = this.#stores[step.store]!;
    const res = await call(this.#till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: step.amount, expires_in_minutes: step.exp } });
    if (res.status !== 201) throw new Error(`invoice creation failed: ${res.status} ${res.text}`);
    const b = res.body;
    const inv: OInv = { key: step.inv, id: b.id, store: step.store, address: b.address, amount: step.amount, req: store.req, lateMs: store.lateMs, createdAt: Date.parse(b.created_at), expiresAt: Date.parse(b.expires_at), status: 'pending', paidAt: null, expiredAt: null, cancelledAt: null, pays: [], events: ['invoice.created'], snaps: [] };
    this.oracle.invoices.push({ ...inv, snaps: [snapOf(inv)] });
    return 'done';
  }

  async #pay(name: string, outs: Outs): Promise<'done' | 'skipped'> {
    const specs = this.#specs(outs);
    if (specs.length === 0) return 'skipped';
    const txid = await this.#node.fake.payMany(specs);
    await this.#track(name, txid);
    if (this.running) this.oracle.mempoolTx(txid, this.#clock.now(), this.#clock.now(), `pay ${name}`);
    return 'done';
  }

  async #replace(step: Extract<Step, { op: 'replace' }>): Promise<'done' | 'skipped'> {
    const of = this.#txids.get(step.of);
    if (!of || !(await this.#node.mempool()).has(of)) return 'skipped';
    const outputs = step.mode === 'back' ? [] : step.mode === 'amounts' ? this.#specs(step.outs ?? []) : undefined;
    let txid: string;
    try {
      txid = await this.#node.fake.replace(of, outputs ? { outputs } : {});
    } catch (err) {
      // The original's inputs may not cover a bigger replacement.
      this.trace.push(`  replace refused: ${(err as Error).message}`);
      return 'skipped';
    }
    await this.#track(step.tx, txid);
    if (this.running) {
      const now = this.#clock.now();
      this.oracle.mempoolTx(txid, now, now, `replace ${step.tx}`);
      const after = await this.#node.mempool();
      this.oracle.reconcile((x) => after.has(x), now, `replace ${step.tx}`);
    }
    return 'done';
  }

  async #mine(n: number, only?: string[]): Promise<'done'> {
    const before = this.#node.fake.tipHeight;
    const mempool = await this.#node.mempool();
    const include = only?.map((k) => this.#txids.get(k)).filter((x): x is string => !!x && mempool.has(x));
    await this.#node.fake.mine(n, include?.length ? { include } : {});
    if (!this.running) return 'done';
    const now = this.#clock.now();
    const { blocks } = await this.#node.chain(before + 1);
    for (const b of blocks.values()) {
      // ZMQ's rawtx of a mined transaction comes before its block's hashblock.
      for (const txid of b.txids) this.oracle.mempoolTx(txid, now, now, `rawtx(block ${b.height})`);
      this.oracle.chainChange([], [b], now, `block ${b.height}`);
    }
    const after = await this.#node.mempool();
    this.oracle.reconcile((x) => after.has(x), now, 'mine');
    return 'done';
  }

  async #reorg(step: Extract<Step, { op: 'reorg' }>): Promise<'done' | 'skipped'> {
    const oldTip = this.#node.fake.tipHeight;
    if (oldTip - step.depth < this.#baseHeight) return 'skipped';
    const before = await this.#node.chain(oldTip - step.depth + 1);
    const mempoolBefore = await this.#node.mempool();
    try {
      await this.#node.fake.reorg(step.depth, { dropTxids: this.#known(step.drop), leaveInMempool: this.#known(step.leave) });
    } catch (err) {
      // A dropped transaction's descendant may be one the new branch must leave out.
      this.trace.push(`  reorg refused: ${(err as Error).message}`);
      return 'skipped';
    }
    if (!this.running) return 'done';
    const now = this.#clock.now();
    const after = await this.#node.chain(oldTip - step.depth + 1);
    const mempoolAfter = await this.#node.mempool();
    const stale = [...before.blocks.values()].reverse();
    const connected = [...after.blocks.values()];
    // The rawtx messages of the reorg: disconnected transactions, those back in the mempool, the new branch's.
    for (const b of stale) for (const txid of b.txids) this.oracle.mempoolTx(txid, now, now, 'rawtx(disconnected)');
    for (const txid of mempoolAfter.keys()) if (!mempoolBefore.has(txid)) this.oracle.mempoolTx(txid, now, now, 'rawtx(back to mempool)');
    for (const b of connected) for (const txid of b.txids) this.oracle.mempoolTx(txid, now, now, 'rawtx(connected)');
    this.oracle.chainChange(stale, connected, now, `reorg ${step.depth}`);
    this.oracle.reconcile((x) => mempoolAfter.has(x), now, 'reorg');
    return 'done';
  }

  /** Moves the clock; a running Till then does its timer sync and expiry tick (its own loops are off in tests). */
  async #advance(ms: number): Promise<'done'> {
    this.#clock.advance(ms);
    if (!this.#till) return 'done';
    await this.#till.rt.chain!.requestSync(false, 'timer');
    await expireDueInvoices(this.#till.rt.ctx);
    const now = this.#clock.now();
    const mempool = await this.#node.mempool();
    this.oracle.reconcile((x) => mempool.has(x), now, 'timer');
    this.oracle.tick(now);
    return 'done';
  }

  async #stop(): Promise<'done' | 'skipped'> {
    if (!this.#till) return 'skipped';
    await this.#till.rt.chain!.idle();
    await this.#till.rt.stop();
    this.#till = null;
    // Let the node see the ZMQ subscriber leave before the next step publishes.
    await sleep(150);
    return 'done';
  }

  async #restart(): Promise<'done' | 'skipped'> {
    if (this.#till) return 'skipped';
    const rt = restartTill(this.#t, this.#fixture, { logger: this.#fixture.till.rt.logger });
    const app = createApp(rt);
    const till: TestTill = { ...this.#fixture.till, rt, app, request: (path, init) => Promise.resolve(app.request(path, init)) };
    await this.#watch(till);
    await expireDueInvoices(rt.ctx);
    this.#till = till;
    await this.#catchUpOracle();
    return 'done';
  }

  async #cancel(key: string): Promise<'done' | 'skipped' | string> {
    const inv = this.oracle.invoices.find((i) => i.key === key);
    if (!this.#till || !inv) return 'skipped';
    const res = await call(this.#till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: this.#stores[inv.store]!.key });
    const allowed = this.oracle.cancel(key, this.#clock.now());
    if ((res.status === 200) === allowed) return 'done';
    return `cancel ${key}: till answered ${res.status} ${JSON.stringify(res.body?.error ?? '')}, oracle ${allowed ? 'allows' : 'refuses'} (status ${inv.status})`;
  }

  /** Starts the chain watcher and waits until its ZMQ subscription and the sync it triggers are done. */
  async #watch(till: TestTill): Promise<void> {
    await startWatching(till, this.#fixture.node);
    await sleep(50);
    await till.rt.chain!.idle();
  }

  /**
   * A start as the oracle sees it: the mempool scan at entry times, blocks Till
   * missed (a reorg while down as one change of up to 6 blocks past Till's old
   * tip, then block by block), the mempool check, a rescan and the expiry tick.
   */
  async #catchUpOracle(): Promise<void> {
    const oracle = this.oracle;
    const now = this.#clock.now();
    oracle.caughtUp = false;
    const mempool = await this.#node.mempool();
    for (const [txid, entry] of mempool) oracle.mempoolTx(txid, Math.min(now, entry), now, 'scan');
    const { tip, blocks } = await this.#node.chain(this.#baseHeight);
    const tillTip = Math.max(...oracle.tillChain.keys());
    const stale: Array<{ height: number; hash: string }> = [];
    for (let h = tillTip; oracle.tillChain.has(h); h--) {
      if (h <= tip && blocks.get(h)?.hash === oracle.tillChain.get(h)) break;
      stale.push({ height: h, hash: oracle.tillChain.get(h)! });
    }
    let next = tillTip + 1;
    if (stale.length) {
      const lowest = stale.at(-1)!.height;
      const connected: BlockInfo[] = [];
      for (let h = lowest; h <= Math.min(tip, tillTip + 6); h++) connected.push(blocks.get(h)!);
      oracle.chainChange(stale, connected, now, 'catch-up reorg');
      next = (connected.at(-1)?.height ?? lowest - 1) + 1;
    }
    for (let h = next; h <= tip; h++) oracle.chainChange([], [blocks.get(h)!], now, `catch-up block ${h}`);
    oracle.caughtUp = true;
    oracle.reconcile((txid) => mempool.has(txid), now, 'start');
    for (const [txid, entry] of mempool) oracle.mempoolTx(txid, Math.min(now, entry), now, 'rescan');
    oracle.tick(now);
  }

  /** Compares once Till has read the node's tip and two comparisons 40 ms apart agree; the diffs after 10 s otherwise (a busy CI machine). */
  async #settleAndCompare(till: TestTill): Promise<string[]> {
    const deadline = Date.now() + 10_000;
    const atTip = () => till.rt.ctx.repos.chainBlocks.tip()?.hash === this.#node.fake.tipHash;
    let agreedOnce = false;
    let diffs: string[];
    for (;;) {
      if (atTip()) await till.rt.chain!.idle();
      diffs = await compareWithOracle(till, this.#stores, this.oracle, (txid) => this.#nameOf(txid));
      if (diffs.length === 0 && atTip()) {
        if (agreedOnce) break;
        agreedOnce = true;
        await sleep(40);
        continue;
      }
      agreedOnce = false;
      if (Date.now() > deadline) break;
      await sleep(25);
    }
    await this.#recordTillChain();
    return diffs;
  }

  /** What Till has read of the chain after a compared step: its tip is the node's. */
  async #recordTillChain(): Promise<void> {
    const chain = await this.#node.chain(this.#baseHeight);
    for (const [h, b] of chain.blocks) this.oracle.tillChain.set(h, b.hash);
    for (const h of this.oracle.tillChain.keys()) if (h > chain.tip) this.oracle.tillChain.delete(h);
  }

  async #track(name: string, txid: string): Promise<void> {
    this.#txids.set(name, txid);
    this.oracle.txs.set(txid, await this.#node.tx(txid));
  }

  #specs(outs: Outs): Array<{ address: string; sats: number }> {
    return outs.flatMap((o) => {
      const inv = this.oracle.invoices.find((i) => i.key === o.inv);
      return inv ? [{ address: inv.address, sats: o.sats }] : [];
    });
  }

  #known(names: string[]): string[] {
    return names.flatMap((k) => this.#txids.get(k) ?? []);
  }

  #nameOf(txid: string): string {
    for (const [name, id] of this.#txids) if (id === txid) return name;
    return txid;
  }

  #paysAnInvoice(txid: string): boolean {
    return this.oracle.txs.get(txid)?.outs.some((o) => this.oracle.byAddress(o.address).length > 0) ?? false;
  }

  #outsOf(name: string): Outs {
    const tx = this.oracle.txs.get(this.#txids.get(name) ?? '');
    return (tx?.outs ?? []).flatMap((o) => this.oracle.byAddress(o.address).map((i) => ({ inv: i.key, sats: o.sats })));
  }
}

/** A live store with the given confirmations and late window. */
function setupLiveStore(till: TestTill, label: string, confirmations: number, lateMin: number): TestStore {
  const store = setupStore(till, { mode: 'live', confirmations, label });
  updateStore(till.rt.ctx, store.storeId, { lateWindowMinutes: lateMin });
  return store;
}
