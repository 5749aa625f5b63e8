// The soak's random steps: a seeded generator, and the step script it writes
// (saved on failure and replayed as is, without the generator).
import type { OInv } from './oracle.ts';
import type { Rng } from '../../../helpers/rng.ts';

export const MIN = 60_000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;

/** Invoices and transactions are named by the script (i0, t3), since ids and txids differ between runs. */
export type Outs = Array<{ inv: string; sats: number }>;

export type Step =
  | { op: 'create'; inv: string; store: number; amount: number; exp: number }
  | { op: 'pay'; tx: string; outs: Outs }
  | { op: 'replace'; tx: string; of: string; mode: 'bump' | 'back' | 'amounts'; outs?: Outs }
  | { op: 'mine'; n: number; only?: string[] }
  | { op: 'reorg'; depth: number; drop: string[]; leave: string[] }
  | { op: 'advance'; ms: number }
  | { op: 'stop' }
  | { op: 'start' }
  | { op: 'cancel'; inv: string };

export interface SoakScript {
  /** One store per confirmations requirement 0, 1, 2, each with its late window. */
  stores: Array<{ req: number; lateMin: number }>;
  steps: Step[];
}

/** What the generator may look at before choosing a step. */
export interface World {
  now: number;
  running: boolean;
  invoices: readonly OInv[];
  /** Script names of unconfirmed transactions that pay an invoice. */
  mempoolPayTxs: string[];
  /** Script names of the transactions in the top `depth` blocks; null when the chain is too short to reorg. */
  tipTxs(depth: number): string[] | null;
  /** The invoice outputs of a transaction, by script name. */
  outsOf(tx: string): Outs;
}

/** The stores of a new script: late windows from none to a week, where the rules change. */
export function generateStores(rng: Rng): SoakScript['stores'] {
  return [0, 1, 2].map((req) => ({ req, lateMin: rng.pick([0, 30, 60, 1440, 1440, 10080, 10080]) }));
}

/** A planned step is made when it is due: its amounts and times depend on the world then. */
type Planned = (w: World) => Step;

/**
 * Mostly single random steps; now and then a planned story (a fee bump across
 * expiry, a payment around the late window's end, a payment gone while Till
 * was down, a cancel racing a payment) that random steps rarely line up.
 */
export class StepGenerator {
  readonly #rng: Rng;
  readonly #plan: Planned[] = [];
  #invoices = 0;
  #txs = 0;

  constructor(rng: Rng) {
    this.#rng = rng;
  }

  next(w: World): Step {
    for (let p = this.#plan.shift(); p; p = this.#plan.shift()) {
      const step = p(w);
      // A story's stop or start may meet Till already so after a random step.
      if ((step.op !== 'stop' || w.running) && (step.op !== 'start' || !w.running)) return step;
    }
    if (w.running && w.invoices.length >= 4 && w.invoices.length < 16 && this.#rng.chance(0.15)) {
      this.#planStory();
      return this.next(w);
    }
    return this.#randomStep(w);
  }

  #newInvoice(): string {
    return `i${this.#invoices++}`;
  }

  #newTx(): string {
    return `t${this.#txs++}`;
  }

  #createStep(store: number): Step {
    return { op: 'create', inv: this.#newInvoice(), store, amount: this.#rng.int(10, 100) * 1000, exp: this.#rng.int(5, 30) };
  }

  #randomStep(w: World): Step {
    const rng = this.#rng;
    if (w.invoices.length < 4) return this.#createStep(w.invoices.length < 3 ? w.invoices.length : rng.int(0, 2));
    const canReorg = w.tipTxs(2) !== null;
    const kind = w.running
      ? rng.weighted({ pay: 25, replace: w.mempoolPayTxs.length ? 15 : 0, mine: 14, reorg: canReorg ? 8 : 0, advance: 14, stop: 5, cancel: 2, create: w.invoices.length < 12 ? 4 : 0 })
      : rng.weighted({ pay: 20, replace: w.mempoolPayTxs.length ? 12 : 0, mine: 14, reorg: canReorg ? 12 : 0, advance: 14, start: 20 });
    switch (kind) {
      case 'create':
        return this.#createStep(rng.int(0, 2));
      case 'pay':
        return this.#payStep(w);
      case 'replace':
        return this.#replaceStep(w);
      case 'mine':
        return this.#mineStep(w);
      case 'reorg':
        return this.#reorgStep(w);
      case 'advance':
        return this.#advanceStep(w);
      case 'cancel':
        return { op: 'cancel', inv: this.#pickInvoice(w).key };
      case 'stop':
      case 'start':
        return { op: kind };
    }
  }

  #pickInvoice(w: World): OInv {
    const pending = w.invoices.filter((i) => i.status === 'pending');
    return pending.length && this.#rng.chance(0.85) ? this.#rng.pick(pending) : this.#rng.pick(w.invoices);
  }

  /** Exact, partial, over, or the rest still owed. */
  #amountFor(i: OInv): number {
    const rng = this.#rng;
    const received = i.pays.filter((p) => p.status !== 'replaced').reduce((s, p) => s + p.sats, 0);
    const k = rng.weighted({ full: 4, partial: 3, over: 2, rest: received > 0 && received < i.amount ? 4 : 0 });
    if (k === 'full') return i.amount;
    if (k === 'partial') return Math.max(1000, Math.round((i.amount * rng.int(20, 70)) / 100));
    if (k === 'over') return Math.round((i.amount * rng.int(110, 150)) / 100);
    return i.amount - received;
  }

  #payStep(w: World): Step {
    const a = this.#pickInvoice(w);
    const outs = [{ inv: a.key, sats: this.#amountFor(a) }];
    if (this.#rng.chance(0.15)) {
      const b = this.#pickInvoice(w);
      // Two outputs to one address are two payments of one invoice.
      if (b.key !== a.key || this.#rng.chance(0.3)) outs.push({ inv: b.key, sats: this.#amountFor(b) });
    }
    return { op: 'pay', tx: this.#newTx(), outs };
  }

  #replaceStep(w: World): Step {
    const of = this.#rng.pick(w.mempoolPayTxs);
    const mode = this.#rng.weighted({ bump: 5, back: 3, amounts: 3 } as const);
    if (mode !== 'amounts') return { op: 'replace', tx: this.#newTx(), of, mode };
    const outs = w.outsOf(of).map((o) => ({ inv: o.inv, sats: Math.max(1000, Math.round((o.sats * this.#rng.pick([40, 70, 100, 130, 200])) / 100)) }));
    return { op: 'replace', tx: this.#newTx(), of, mode, outs };
  }

  #mineStep(w: World): Step {
    const n = this.#rng.pick([1, 1, 1, 2, 3]);
    if (w.mempoolPayTxs.length < 2 || !this.#rng.chance(0.2)) return { op: 'mine', n };
    return { op: 'mine', n, only: w.mempoolPayTxs.filter(() => this.#rng.chance(0.5)) };
  }

  /** Each transaction of the disconnected blocks is mined again, double-spent (drop) or left in the mempool. */
  #reorgStep(w: World): Step {
    const depth = this.#rng.chance(0.6) ? 1 : 2;
    const drop: string[] = [];
    const leave: string[] = [];
    for (const k of w.tipTxs(depth) ?? []) {
      const r = this.#rng.next();
      if (r < 0.35) drop.push(k);
      else if (r < 0.6) leave.push(k);
    }
    return { op: 'reorg', depth, drop, leave };
  }

  /** Minutes to a week, or to just around an invoice's expiry or late window's end, where the rules turn. */
  #advanceStep(w: World): Step {
    const rng = this.#rng;
    const k = rng.weighted({ minutes: 8, hours: 2, days: 1, week: 1, toExpiry: 5, toLateEnd: 2 });
    if (k === 'minutes') return { op: 'advance', ms: rng.int(1, 10) * MIN };
    if (k === 'hours') return { op: 'advance', ms: rng.int(1, 12) * HOUR };
    if (k === 'days') return { op: 'advance', ms: rng.int(1, 3) * DAY };
    if (k === 'week') return { op: 'advance', ms: rng.int(6, 8) * DAY };
    const target = (i: OInv) => (k === 'toExpiry' ? i.expiresAt : i.expiredAt! + i.lateMs);
    const cands = w.invoices.filter((i) => (k === 'toExpiry' ? i.expiresAt > w.now : i.status === 'expired' && target(i) > w.now));
    if (cands.length === 0) return { op: 'advance', ms: rng.int(1, 20) * MIN };
    return { op: 'advance', ms: Math.max(1000, target(rng.pick(cands)) - w.now + rng.pick([-MIN, -1000, 0, 1000, MIN])) };
  }

  #planStory(): void {
    const inv = this.#newInvoice();
    const amount = this.#rng.int(10, 100) * 1000;
    this.#plan.push(() => ({ op: 'create', inv, store: this.#rng.int(0, 2), amount, exp: this.#rng.int(5, 30) }));
    const story = this.#rng.weighted({ bump: 4, window: 3, gone: 3, cancel: 2 });
    if (story === 'bump') this.#planBumpAcrossExpiry(inv, amount);
    else if (story === 'window') this.#planAroundLateWindow(inv, amount);
    else if (story === 'gone') this.#planGoneWhileDown(inv, amount);
    else this.#planCancelRace(inv, amount);
  }

  /** Paid (maybe in part) before expiry, then fee-bumped after it, maybe while Till is down. */
  #planBumpAcrossExpiry(inv: string, amount: number): void {
    const rng = this.#rng;
    const [t1, t2] = [this.#newTx(), this.#newTx()];
    const first = rng.pick([amount, amount, Math.round(amount / 2), Math.round(amount * 1.2)]);
    const plan = this.#plan;
    plan.push(() => ({ op: 'pay', tx: t1, outs: [{ inv, sats: first }] }));
    plan.push((w) => ({ op: 'advance', ms: invoice(w, inv).expiresAt - w.now + rng.pick([1000, 5 * MIN, 2 * HOUR, 2 * DAY]) }));
    const down = rng.chance(0.4);
    if (down) plan.push(() => ({ op: 'stop' }));
    const mode = rng.pick(['bump', 'bump', 'back', 'amounts', 'amounts'] as const);
    const outs = mode === 'amounts' ? [{ inv, sats: Math.round((first * rng.pick([50, 90, 100, 110, 200])) / 100) }] : undefined;
    plan.push(() => ({ op: 'replace', tx: t2, of: t1, mode, ...(outs ? { outs } : {}) }));
    if (rng.chance(0.5)) plan.push(() => ({ op: 'mine', n: rng.int(1, 2) }));
    if (down) {
      if (rng.chance(0.5)) plan.push(() => ({ op: 'advance', ms: rng.pick([MIN, HOUR, DAY]) }));
      plan.push(() => ({ op: 'start' }));
    }
    plan.push(() => ({ op: 'mine', n: rng.int(1, 2) }));
  }

  /** While Till is down: paid inside the late window, then again around its end, maybe across a reorg. */
  #planAroundLateWindow(inv: string, amount: number): void {
    const rng = this.#rng;
    const plan = this.#plan;
    if (rng.chance(0.5)) {
      const t0 = this.#newTx();
      plan.push(() => ({ op: 'pay', tx: t0, outs: [{ inv, sats: Math.round(amount / 3) }] }));
      if (rng.chance(0.5)) plan.push(() => ({ op: 'mine', n: 1 }));
    }
    if (rng.chance(0.5)) plan.push((w) => ({ op: 'advance', ms: invoice(w, inv).expiresAt - w.now + MIN }));
    plan.push(() => ({ op: 'stop' }));
    if (rng.chance(0.4)) plan.push(() => ({ op: 'reorg', depth: rng.int(1, 2), drop: [], leave: [] }));
    const frac = rng.pick([0.1, 0.5, 0.9]);
    plan.push((w) => {
      const i = invoice(w, inv);
      return { op: 'advance', ms: Math.max(1000, i.expiresAt + Math.round(i.lateMs * frac) - w.now) + rng.pick([0, MIN]) };
    });
    const [t1, t2] = [this.#newTx(), this.#newTx()];
    plan.push(() => ({ op: 'pay', tx: t1, outs: [{ inv, sats: amount }] }));
    if (rng.chance(0.7)) plan.push(() => ({ op: 'mine', n: 1 }));
    plan.push((w) => {
      const i = invoice(w, inv);
      return { op: 'advance', ms: Math.max(1000, i.expiresAt + i.lateMs - w.now) + rng.pick([-MIN, 1000, HOUR, DAY]) };
    });
    plan.push(() => ({ op: 'pay', tx: t2, outs: [{ inv, sats: rng.pick([amount, Math.round(amount / 2)]) }] }));
    plan.push(() => ({ op: 'mine', n: rng.int(1, 2) }));
    if (rng.chance(0.3)) plan.push(() => ({ op: 'reorg', depth: 1, drop: [], leave: rng.chance(0.5) ? [t2] : [] }));
    plan.push(() => ({ op: 'start' }));
  }

  /** Paid on time; while Till is down past expiry the payment is replaced (or its block reorged away); paid again after. */
  #planGoneWhileDown(inv: string, amount: number): void {
    const rng = this.#rng;
    const plan = this.#plan;
    const [t1, t2, t3] = [this.#newTx(), this.#newTx(), this.#newTx()];
    plan.push(() => ({ op: 'pay', tx: t1, outs: [{ inv, sats: amount }] }));
    const mined = rng.chance(0.5);
    if (mined) plan.push(() => ({ op: 'mine', n: 1 }));
    plan.push((w) => ({ op: 'advance', ms: invoice(w, inv).expiresAt - w.now + rng.pick([1000, 10 * MIN]) }));
    plan.push(() => ({ op: 'stop' }));
    plan.push(() => ({ op: 'advance', ms: rng.pick([HOUR, DAY, 3 * DAY, 6 * DAY]) }));
    plan.push(() => (mined ? { op: 'reorg', depth: 1, drop: [t1], leave: [] } : { op: 'replace', tx: t2, of: t1, mode: 'back' }));
    plan.push(() => ({ op: 'advance', ms: rng.pick([MIN, HOUR, 2 * DAY]) }));
    plan.push(() => ({ op: 'start' }));
    plan.push(() => ({ op: 'advance', ms: rng.pick([MIN, HOUR, DAY]) }));
    plan.push(() => ({ op: 'pay', tx: t3, outs: [{ inv, sats: amount }] }));
    plan.push(() => ({ op: 'mine', n: 2 }));
  }

  /** A payment seen, the invoice cancelled, then the payment replaced by one paying more and mined. */
  #planCancelRace(inv: string, amount: number): void {
    const rng = this.#rng;
    const plan = this.#plan;
    const [t1, t2] = [this.#newTx(), this.#newTx()];
    plan.push(() => ({ op: 'pay', tx: t1, outs: [{ inv, sats: rng.pick([amount, Math.round(amount / 2)]) }] }));
    plan.push(() => ({ op: 'cancel', inv }));
    plan.push(() => ({ op: 'replace', tx: t2, of: t1, mode: rng.pick(['bump', 'back', 'amounts'] as const), outs: [{ inv, sats: amount * 2 }] }));
    plan.push(() => ({ op: 'mine', n: 1 }));
    if (rng.chance(0.5)) plan.push(() => ({ op: 'reorg', depth: 1, drop: rng.chance(0.5) ? [t2] : [], leave: [] }));
  }
}

function invoice(w: World, key: string): OInv {
  const i = w.invoices.find((x) => x.key === key);
  if (!i) throw new Error(`no invoice ${key} in the script`);
  return i;
}
