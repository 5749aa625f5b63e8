import type { Invoice, Payment } from '../../../src/domain/invoice.ts';
import type { DomainEvent } from '../../../src/domain/invoice-state.ts';

// Shared invoices and payments for the state machine and simulate tests.
// Times are fixed so a failure names the exact moment.
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
export const T0 = Date.parse('2026-11-21T10:00:00.000Z');
export const EXPIRES = T0 + 30 * MINUTE;
export const LATE_WINDOW = 7 * DAY;
export const AMOUNT = 100_000;

export function makeInvoice(overrides: Partial<Invoice> = {}): Invoice {
  return {
    id: 'inv_0000000000aaaaaaaaaaaaaaaa',
    storeId: 'sto_0000000000aaaaaaaaaaaaaaaa',
    livemode: false,
    status: 'pending',
    amountSats: AMOUNT,
    fiat: null,
    address: 'bcrt1qcr8te4kr609gcawutmrza0j4xv80jy8zeqchgx',
    confirmationsRequired: 1,
    lateWindowMs: LATE_WINDOW,
    expiresAt: EXPIRES,
    createdAt: T0,
    paidAt: null,
    cancelledAt: null,
    expiredAt: null,
    metadata: { order: '42' },
    callbackUrl: null,
    payments: [],
    ...overrides,
  };
}

/** A txid made of one repeated hex character, so tests can name payments 'a', 'b'... */
export function txid(name: string): string {
  return name.repeat(64);
}

export function mempool(name: string, amountSats: number, firstSeenAt: number, vout = 0): Payment {
  return { txid: txid(name), vout, amountSats, status: 'mempool', confirmations: 0, blockHeight: null, coinbase: false, firstSeenAt };
}

export function confirmed(name: string, amountSats: number, firstSeenAt: number, confirmations = 1, vout = 0): Payment {
  return { txid: txid(name), vout, amountSats, status: 'confirmed', confirmations, blockHeight: 800_000, coinbase: false, firstSeenAt };
}

export function replaced(name: string, amountSats: number, firstSeenAt: number, vout = 0): Payment {
  return { txid: txid(name), vout, amountSats, status: 'replaced', confirmations: 0, blockHeight: null, coinbase: false, firstSeenAt };
}

/** A coinbase output paying the invoice, in a block `confirmations` deep (under 100: immature). */
export function coinbase(name: string, amountSats: number, firstSeenAt: number, confirmations = 1, vout = 0): Payment {
  return { ...confirmed(name, amountSats, firstSeenAt, confirmations, vout), coinbase: true };
}

/** A payment's txid as a test names it: 'a' for txid('a'), else what `name` says. */
export function nameTxid(value: string, name: (txid: string) => string | undefined = () => undefined): string {
  const first = value.slice(0, 1);
  return value === txid(first) ? first : (name(value) ?? value);
}

/** Events as short strings: 'paid', 'payment_detected:a', 'payment_detected:a:1' (vout 1). */
export function describeEvents(events: DomainEvent[], name?: (txid: string) => string | undefined): string[] {
  return events.map((e) => {
    const type = e.type.replace(/^invoice\./, '');
    if (!e.payment) return type;
    return `${type}:${nameTxid(e.payment.txid, name)}${e.payment.vout === 0 ? '' : `:${e.payment.vout}`}`;
  });
}

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

// One invoice per status, as the rules would have left it, for the state x fact matrices.
export const PAID = makeInvoice({
  status: 'paid',
  paidAt: T0 + 10 * MINUTE,
  payments: [confirmed('a', AMOUNT, T0 + MINUTE)],
});
export const LATE_PAID = makeInvoice({
  status: 'late_paid',
  expiredAt: EXPIRES,
  paidAt: EXPIRES + DAY,
  payments: [confirmed('a', AMOUNT, EXPIRES + HOUR)],
});
export const EXPIRED = makeInvoice({ status: 'expired', expiredAt: EXPIRES });
export const CANCELLED = makeInvoice({ status: 'cancelled', cancelledAt: T0 + 5 * MINUTE });
