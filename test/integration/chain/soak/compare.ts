// Till against the oracle after a step: every invoice through the API (one
// invoice, the list page, the checkout page), its webhook events and their
// payloads, and invariants that need no oracle at all.
import type { EventRecord } from '../../../../src/db/events.ts';
import { call, type TestStore, type TestTill } from '../../../helpers/till-server.ts';
import { confirmedSats, receivedSats, type OInv, type Oracle } from './oracle.ts';

export interface ApiStore extends TestStore {
  req: number;
  lateMs: number;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const STATUS_EVENTS = ['invoice.paid', 'invoice.expired', 'invoice.late_paid', 'invoice.cancelled'];
const STATUS_EVENTS_FOR: Record<string, string> = { pending: '', paid: 'invoice.paid', expired: 'invoice.expired', late_paid: 'invoice.expired,invoice.late_paid', cancelled: 'invoice.cancelled' };

/** Every difference found, as readable lines naming invoices and transactions by their script names. */
export async function compareWithOracle(till: TestTill, stores: ApiStore[], oracle: Oracle, nameOf: (txid: string) => string): Promise<string[]> {
  const lists = await Promise.all(stores.map(async (s) => (await call(till, 'GET', '/v1/invoices?limit=100', { key: s.key })).body.data as any[]));
  const diffs: string[] = [];
  for (const o of oracle.invoices) {
    const got = (await call(till, 'GET', `/v1/invoices/${o.id}`, { key: stores[o.store]!.key })).body;
    diffs.push(...compareInvoice(o, got, nameOf));
    const events = till.rt.ctx.repos.events.listForInvoice(o.id);
    diffs.push(...compareEvents(o, events));
    const listed = lists[o.store]!.find((x) => x.id === o.id);
    const checkout = (await call(till, 'GET', `/pay/invoices/${o.id}`)).body;
    diffs.push(...compareViews(o.key, got, { list: listed, checkout }));
    diffs.push(...checkInvariants(o.key, got, events.map((e) => e.type), oracle, nameOf));
  }
  return diffs;
}

function compareInvoice(o: OInv, got: any, nameOf: (txid: string) => string): string[] {
  const diffs: string[] = [];
  const want: Record<string, unknown> = {
    status: o.status,
    amount_received_sats: receivedSats(o),
    amount_confirmed_sats: confirmedSats(o),
    paid_at: iso(o.paidAt),
    expired_at: iso(o.expiredAt),
    cancelled_at: iso(o.cancelledAt),
  };
  for (const [k, v] of Object.entries(want)) if (got[k] !== v) diffs.push(`${o.key} (${o.id}, ${o.req} conf) ${k}: till=${got[k]} oracle=${v}`);
  const tillPays = new Map<string, any>(got.payments.map((p: any) => [`${p.txid}:${p.vout}`, p]));
  for (const p of o.pays) {
    const label = `${o.key} payment ${nameOf(p.txid)}:${p.vout}`;
    const q = tillPays.get(`${p.txid}:${p.vout}`);
    if (!q) {
      diffs.push(`${label} missing in till (oracle: ${p.status}, ${p.sats} sats)`);
      continue;
    }
    tillPays.delete(`${p.txid}:${p.vout}`);
    const confirmed = p.status === 'confirmed';
    const wantPay = { status: p.status, confirmations: confirmed ? p.confs : 0, block_height: confirmed ? p.height : null, first_seen_at: iso(p.firstSeen), amount_sats: p.sats };
    for (const [f, v] of Object.entries(wantPay)) if (q[f] !== v) diffs.push(`${label} ${f}: till=${q[f]} oracle=${v}`);
  }
  for (const q of tillPays.values()) diffs.push(`${o.key} payment ${nameOf(q.txid)}:${q.vout} extra in till (${q.status}, ${q.amount_sats} sats, first seen ${q.first_seen_at})`);
  return diffs;
}

/** The events stored for the invoice (what its webhooks carry): types in order, and the invoice as each payload shows it. */
function compareEvents(o: OInv, records: EventRecord[]): string[] {
  const types = records.map((e) => e.type);
  if (types.join(',') !== o.events.join(',')) return [`${o.key} events: till=[${types.join(',')}] oracle=[${o.events.join(',')}]`];
  const diffs: string[] = [];
  const detected = new Set<string>();
  records.forEach((r, i) => {
    const { invoice, payment } = JSON.parse(r.body).data;
    const snap = `${invoice.status} recv=${invoice.amount_received_sats} conf=${invoice.amount_confirmed_sats} paid_at=${invoice.paid_at} expired_at=${invoice.expired_at}`;
    if (snap !== o.snaps[i]) diffs.push(`${o.key} event #${i} ${r.type} payload: till=${snap} oracle=${o.snaps[i]}`);
    if (['invoice.payment_detected', 'invoice.payment_reversed', 'invoice.payment_restored'].includes(r.type) && !payment) diffs.push(`${o.key} event #${i} ${r.type} names no payment`);
    if (r.type === 'invoice.payment_detected' && payment) {
      const outpoint = `${payment.txid}:${payment.vout}`;
      if (detected.has(outpoint)) diffs.push(`INVARIANT ${o.key} payment ${outpoint} detected twice`);
      detected.add(outpoint);
    }
  });
  return diffs;
}

/** The list page and the checkout page show the invoice as GET does. */
function compareViews(key: string, got: any, views: Record<string, any>): string[] {
  const diffs: string[] = [];
  for (const [where, x] of Object.entries(views)) {
    if (!x) {
      diffs.push(`${key} missing from the ${where} page`);
      continue;
    }
    for (const f of ['status', 'amount_received_sats', 'amount_confirmed_sats', 'paid_at', 'expired_at']) if (x[f] !== got[f]) diffs.push(`${key} ${where} ${f}=${x[f]} but GET says ${got[f]}`);
    // The checkout snapshot may hold confirmation counts for up to 1 s of the test's frozen clock: not compared there.
    const pays = (v: any) => JSON.stringify(v.payments.map((p: any) => [p.txid, p.vout, p.status, where === 'checkout' ? 0 : p.confirmations, p.first_seen_at]).sort());
    if (pays(x) !== pays(got)) diffs.push(`${key} ${where} payments differ from GET: ${pays(x)} vs ${pays(got)}`);
  }
  return diffs;
}

/** Rules that hold whatever the oracle says: sums, conflicts, status moves, and status events. */
function checkInvariants(key: string, got: any, events: string[], oracle: Oracle, nameOf: (txid: string) => string): string[] {
  const diffs: string[] = [];
  const counted = got.payments.filter((p: any) => p.status !== 'replaced');
  const received = counted.reduce((s: number, p: any) => s + p.amount_sats, 0);
  if (received !== got.amount_received_sats) diffs.push(`INVARIANT ${key} amount_received_sats ${got.amount_received_sats} is not the sum of its counting payments, ${received}`);
  for (let a = 0; a < counted.length; a++) {
    for (let b = a + 1; b < counted.length; b++) {
      const ta = oracle.txs.get(counted[a].txid);
      const tb = oracle.txs.get(counted[b].txid);
      if (ta && tb && ta.txid !== tb.txid && ta.inputs.some((x) => tb.inputs.includes(x))) diffs.push(`INVARIANT ${key} counts both ${nameOf(ta.txid)} and ${nameOf(tb.txid)}, which conflict`);
    }
  }
  // Also says no status went back: paid then pending keeps invoice.paid.
  const statusEvents = events.filter((e) => STATUS_EVENTS.includes(e)).join(',');
  if (statusEvents !== STATUS_EVENTS_FOR[got.status]) diffs.push(`INVARIANT ${key} status ${got.status} with status events [${statusEvents}]`);
  return diffs;
}
