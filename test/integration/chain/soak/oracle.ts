// The soak's model of what Till should say about each invoice, written from the
// invoice lifecycle and docs/DECISIONS.md ("Invoices and the chain"), not from
// src/: it imports nothing of Till's, so a rule broken there shows as a diff.
// It is fed the units Till is documented to judge one at a time (a mempool
// transaction, a move of the best chain, the mempool check after a sync, the
// expiry tick, a cancel), each with the moment it is judged at.

export type Status = 'pending' | 'paid' | 'expired' | 'late_paid' | 'cancelled';
export type PStatus = 'mempool' | 'confirmed' | 'replaced';

export interface OPay {
  txid: string;
  vout: number;
  sats: number;
  firstSeen: number;
  status: PStatus;
  height: number | null;
  hash: string | null;
  confs: number;
}

export interface OInv {
  key: string; // driver's id (i0, i1…)
  id: string;
  store: number;
  address: string;
  amount: number;
  req: number;
  lateMs: number;
  createdAt: number;
  expiresAt: number;
  status: Status;
  paidAt: number | null;
  expiredAt: number | null;
  cancelledAt: number | null;
  pays: OPay[];
  events: string[];
  /** The invoice as each event's payload should show it: status, received, confirmed. */
  snaps: string[];
}

export interface OTx {
  txid: string;
  inputs: string[];
  outs: Array<{ vout: number; address: string; sats: number }>;
}

export interface BlockInfo {
  height: number;
  hash: string;
  time: number; // ms
  txids: string[];
}

const op = (p: { txid: string; vout: number }) => `${p.txid}:${p.vout}`;
const counting = (p: OPay) => p.status !== 'replaced';
const confirmedFor = (req: number) => (p: OPay) => counting(p) && p.confs >= req;
const sum = (ps: readonly OPay[], f: (p: OPay) => boolean) => ps.reduce((s, p) => (f(p) ? s + p.sats : s), 0);

export function lateEnd(inv: OInv): number {
  return (inv.expiredAt ?? inv.expiresAt) + inv.lateMs;
}

/** DECISIONS ("The watch set", joinUntil): new money joins within the window; a pending invoice covered by on-time payments waits (no end). */
export function joinUntil(inv: OInv): number | null {
  switch (inv.status) {
    case 'pending':
      return sum(inv.pays, (p) => counting(p) && p.firstSeen < inv.expiresAt) >= inv.amount ? null : inv.expiresAt + inv.lateMs;
    case 'expired':
      return lateEnd(inv);
    case 'cancelled':
      return inv.cancelledAt! + inv.lateMs;
    case 'paid':
    case 'late_paid':
      return inv.paidAt! + inv.lateMs;
  }
}

export interface Judged {
  inv: OInv;
  events: string[];
}

/** The lifecycle rules: pending -> paid / expired, expired -> late_paid, payment_reversed and payment_restored. */
export function judge(before: OInv, pays: OPay[], heldAt: number, catchingUp: boolean, now: number, tick = false): Judged {
  const at = Math.max(before.createdAt, Math.min(now, heldAt));
  const known = new Set(before.pays.map(op));
  // One payment_detected per transaction, however many of its outputs pay the invoice.
  const events: string[] = [...new Set(pays.filter((p) => !known.has(op(p))).map((p) => p.txid))].map(() => 'invoice.payment_detected');
  let inv: OInv = { ...before, pays };
  const req = inv.req;
  if (inv.status === 'pending') {
    const onTime = (p: OPay) => p.firstSeen < inv.expiresAt;
    const mayExpire = !catchingUp || sum(pays, (p) => p.status === 'confirmed' && p.confs >= req) >= inv.amount;
    if (sum(pays, (p) => onTime(p) && confirmedFor(req)(p)) >= inv.amount) {
      inv = { ...inv, status: 'paid', paidAt: at };
      events.push('invoice.paid');
    } else if (mayExpire && at >= inv.expiresAt && sum(pays, (p) => onTime(p) && counting(p)) < inv.amount) {
      const prev = tick ? pays : before.pays;
      const waited = sum(prev, (p) => onTime(p) && counting(p)) >= inv.amount;
      inv = { ...inv, status: 'expired', expiredAt: waited ? at : inv.expiresAt };
      events.push('invoice.expired');
    }
  }
  if (inv.status === 'expired') {
    if (at < lateEnd(inv) && sum(pays, confirmedFor(req)) >= inv.amount) {
      inv = { ...inv, status: 'late_paid', paidAt: Math.max(at, inv.expiredAt!) };
      events.push('invoice.late_paid');
    }
  }
  if (before.status === 'paid' || before.status === 'late_paid') {
    const held = (p: OPay) => counting(p) && (req === 0 || p.status === 'confirmed');
    const [was, is] = [sum(before.pays, held) >= before.amount, sum(pays, held) >= before.amount];
    if (was && !is) events.push('invoice.payment_reversed');
    if (!was && is) events.push('invoice.payment_restored');
  }
  return { inv, events };
}

export function receivedSats(inv: OInv): number {
  return sum(inv.pays, counting);
}

export function confirmedSats(inv: OInv): number {
  return sum(inv.pays, confirmedFor(inv.req));
}

/** The invoice as a webhook payload should show it. */
export function snapOf(inv: OInv): string {
  return `${inv.status} recv=${receivedSats(inv)} conf=${confirmedSats(inv)} paid_at=${inv.paidAt === null ? null : new Date(inv.paidAt).toISOString()} expired_at=${inv.expiredAt === null ? null : new Date(inv.expiredAt).toISOString()}`;
}

export class Oracle {
  invoices: OInv[] = [];
  txs = new Map<string, OTx>();
  /** What Till has read of the best chain: hash by height (as of its last sync). */
  tillChain = new Map<number, string>();
  caughtUp = true;
  log: string[] = [];

  byAddress(address: string): OInv[] {
    return this.invoices.filter((i) => i.address === address);
  }

  #commit(j: Judged, what: string): void {
    const i = this.invoices.findIndex((x) => x.key === j.inv.key);
    const snap = snapOf(j.inv);
    const inv = { ...j.inv, events: [...j.inv.events, ...j.events], snaps: [...j.inv.snaps, ...j.events.map(() => snap)] };
    this.invoices[i] = inv;
    if (j.events.length) this.log.push(`${what}: ${inv.key} ${j.events.join(',')} -> ${inv.status}`);
  }

  #conflicting(txid: string): Set<string> {
    const tx = this.txs.get(txid);
    const out = new Set<string>();
    if (!tx) return out;
    const ins = new Set(tx.inputs);
    for (const other of this.txs.values()) if (other.txid !== txid && other.inputs.some((i) => ins.has(i))) out.add(other.txid);
    return out;
  }

  #matches(txid: string): Array<{ inv: OInv; vout: number; sats: number }> {
    const tx = this.txs.get(txid);
    if (!tx) return [];
    return tx.outs.flatMap((o) => this.byAddress(o.address).map((inv) => ({ inv, vout: o.vout, sats: o.sats })));
  }

  /** DECISIONS: a replacement paying the invoice no more than what it replaced there keeps their first sighting. */
  #replacementSeenAt(before: OInv, replaced: Set<string>, outs: Array<{ inv: OInv; sats: number }>, seenAt: number): number {
    const earlier = before.pays.filter((p) => p.status !== 'replaced' && replaced.has(p.txid));
    if (earlier.length === 0) return seenAt;
    const pays = outs.filter((o) => o.inv.key === before.key).reduce((s, o) => s + o.sats, 0);
    const paid = earlier.reduce((s, p) => s + p.sats, 0);
    return pays <= paid ? Math.min(seenAt, ...earlier.map((p) => p.firstSeen)) : seenAt;
  }

  /** A new outpoint joins if first seen before joinUntil (as the invoice stood before the unit). */
  #withPayment(before: OInv, pays: OPay[], p: OPay): OPay[] {
    const i = pays.findIndex((x) => op(x) === op(p));
    if (i < 0) {
      const until = joinUntil(before);
      return until === null || p.firstSeen < until ? [...pays, p] : pays;
    }
    const next = [...pays];
    next[i] = { ...p, firstSeen: pays[i]!.firstSeen };
    return next;
  }

  /** A transaction seen in the mempool (ZMQ rawtx, or the start's scan at its entry time). */
  mempoolTx(txid: string, seenAt: number, now: number, what: string): void {
    const matches = this.#matches(txid);
    if (matches.length === 0) return;
    const conflicting = this.#conflicting(txid);
    const lists = new Map<string, { inv: OInv; pays: OPay[] }>();
    // DECISIONS ("Replaced"): a transaction seen that spends what a payment's transaction spent replaced that payment
    // in the same judgement. A payment Till still holds as confirmed cannot be on the chain then (its block left it).
    const hit = (p: OPay) => p.status !== 'replaced' && conflicting.has(p.txid);
    for (const inv of this.invoices) {
      if (inv.pays.some(hit)) {
        lists.set(inv.key, { inv, pays: inv.pays.map((p) => (hit(p) ? { ...p, status: 'replaced' as const, height: null, hash: null, confs: 0 } : p)) });
      }
    }
    for (const m of matches) {
      let e = lists.get(m.inv.key);
      if (!e) lists.set(m.inv.key, (e = { inv: m.inv, pays: m.inv.pays }));
      const existing = e.pays.find((p) => p.txid === txid && p.vout === m.vout);
      if (existing && existing.status !== 'replaced') continue;
      const seen = this.#replacementSeenAt(e.inv, conflicting, matches, seenAt);
      e.pays = this.#withPayment(e.inv, e.pays, { txid, vout: m.vout, sats: m.sats, firstSeen: seen, status: 'mempool', height: null, hash: null, confs: 0 });
    }
    for (const e of lists.values()) {
      if (e.pays === e.inv.pays) continue;
      this.#commit(judge(e.inv, e.pays, seenAt, !this.caughtUp, now), `${what} mempool ${txid.slice(0, 8)}`);
    }
  }

  /** One move of the best chain (blocks connected, or a reorg): one judgement per invoice. */
  chainChange(disconnected: Array<{ height: number; hash: string }>, connected: BlockInfo[], now: number, what: string): void {
    const lowest = disconnected.at(-1);
    const tip = connected.at(-1)?.height ?? (lowest ? lowest.height - 1 : null);
    if (tip === null) return;
    const touched = new Map<string, { before: OInv; pays: OPay[]; refused: OPay[] }>();
    const take = (inv: OInv) => {
      let e = touched.get(inv.key);
      if (!e) touched.set(inv.key, (e = { before: inv, pays: inv.pays, refused: [] }));
      return e;
    };
    for (const d of disconnected) {
      for (const inv of this.invoices) {
        if (!inv.pays.some((p) => p.hash === d.hash)) continue;
        const e = take(inv);
        e.pays = e.pays.map((p) => (p.hash === d.hash ? { ...p, status: 'mempool' as const, confs: 0, height: null, hash: null } : p));
      }
      this.tillChain.delete(d.height);
    }
    for (const b of connected) {
      this.tillChain.set(b.height, b.hash);
      for (const txid of b.txids) {
        const matches = this.#matches(txid);
        if (matches.length === 0) continue;
        const conflicting = this.#conflicting(txid);
        // DECISIONS: the payments this transaction replaced are the unconfirmed ones it conflicts with, as the chain
        // stands when it is mined (a reorg of this same change may have put them back in the mempool).
        const replacedNow = new Map<string, OInv>();
        if (conflicting.size > 0) {
          for (const inv of this.invoices) if (inv.pays.some((p) => p.status === 'mempool' && conflicting.has(p.txid))) take(inv);
          for (const e of touched.values()) {
            replacedNow.set(e.before.key, { ...e.before, pays: e.pays });
            e.pays = e.pays.map((p) => (p.status === 'mempool' && conflicting.has(p.txid) ? { ...p, status: 'replaced' as const } : p));
          }
        }
        for (const m of matches) {
          const e = take(m.inv);
          const asReplaced = replacedNow.get(e.before.key) ?? e.before;
          const seen = this.#replacementSeenAt(asReplaced, conflicting, matches, Math.min(now, b.time));
          const p: OPay = { txid, vout: m.vout, sats: m.sats, firstSeen: seen, status: 'confirmed', height: b.height, hash: b.hash, confs: 1 };
          const next = this.#withPayment(e.before, e.pays, p);
          if (next === e.pays) e.refused.push(p);
          e.pays = next;
        }
      }
    }
    const base = connected[0]?.height ?? tip + 1;
    const depth = (ps: OPay[]) => ps.map((p) => (p.status === 'confirmed' && p.height !== null ? { ...p, confs: tip - p.height + 1 } : p));
    // Confirmation counts of every invoice move; those with recent payments are judged again.
    for (const inv of this.invoices) {
      if (touched.has(inv.key)) continue;
      const moved = depth(inv.pays);
      if (inv.pays.some((p) => p.status === 'confirmed' && p.height !== null && p.height >= base - 6)) take(inv);
      else {
        const i = this.invoices.indexOf(inv);
        this.invoices[i] = { ...inv, pays: moved };
      }
    }
    const lastTime = connected.at(-1)?.time ?? now;
    for (const e of touched.values()) {
      const counted = depth(e.pays);
      const search = !this.caughtUp && connected.length > 1 && (e.before.status === 'pending' || e.before.status === 'expired');
      const heldAt = (search ? this.#settlingTime(e.before, counted, connected, now) : null) ?? lastTime;
      let pays = counted;
      if (e.refused.length) {
        const until = joinUntil(judge(e.before, counted, this.caughtUp ? now : heldAt, !this.caughtUp, now).inv);
        const joining = e.refused.filter((p) => until === null || p.firstSeen < until);
        if (joining.length) pays = depth([...counted, ...joining]);
      }
      this.#commit(judge(e.before, pays, this.caughtUp ? now : heldAt, !this.caughtUp, now), `${what}`);
    }
  }

  /** DECISIONS: blocks read as one change are judged at the first of them whose payments settle the invoice. */
  #settlingTime(before: OInv, pays: OPay[], blocks: BlockInfo[], now: number): number | null {
    const known = new Set(before.pays.map(op));
    for (const b of blocks) {
      const asOf = pays.flatMap((p): OPay[] => {
        if (p.height === null) return [p];
        if (p.height <= b.height) return [{ ...p, confs: b.height - p.height + 1 }];
        return known.has(op(p)) ? [{ ...p, status: 'mempool', confs: 0, height: null, hash: null }] : [];
      });
      if (judge(before, asOf, b.time, true, now).inv.status !== before.status) return b.time;
    }
    return null;
  }

  /** The mempool check after a sync: unconfirmed payments gone from the node's mempool are replaced. */
  reconcile(inMempool: (txid: string) => boolean, now: number, what: string): void {
    for (const inv of [...this.invoices]) {
      const gone = inv.pays.filter((p) => p.status === 'mempool' && !inMempool(p.txid));
      if (gone.length === 0) continue;
      const ids = new Set(gone.map((p) => p.txid));
      const pays = inv.pays.map((p) => (p.status === 'mempool' && ids.has(p.txid) ? { ...p, status: 'replaced' as const } : p));
      this.#commit(judge(inv, pays, now, false, now), `${what} reconcile`);
    }
  }

  /** The expiry worker (live invoices only once caught up). */
  tick(now: number): void {
    if (!this.caughtUp) return;
    for (const inv of [...this.invoices]) {
      if (inv.status !== 'pending' || inv.expiresAt > now) continue;
      if (sum(inv.pays, (p) => counting(p) && p.firstSeen < inv.expiresAt) >= inv.amount) continue;
      this.#commit(judge(inv, inv.pays, now, false, now, true), 'tick');
    }
  }

  /** Whether a cancel is allowed now, and the invoice after it. */
  cancel(key: string, now: number): boolean {
    const inv = this.invoices.find((i) => i.key === key)!;
    const current = judge(inv, inv.pays, now, false, now, true).inv;
    if (current.status !== 'pending') return false;
    this.#commit({ inv: { ...current, status: 'cancelled', cancelledAt: now }, events: ['invoice.cancelled'] }, 'cancel');
    return true;
  }
}
