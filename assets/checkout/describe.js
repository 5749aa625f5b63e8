// What the hosted checkout tells the buyer about an invoice, from its public
// snapshot (GET /pay/invoices/:id): the status headline and its detail, and
// what is still to pay. Pure functions, shared by the page's script
// (checkout.js) and the page Till renders for browsers without JavaScript
// (src/http/internal/plain-checkout.ts), so both say the same thing.

const SATS_PER_BTC = 100_000_000;
// A coinbase payment can be spent, and counts as confirmed, only at this many confirmations.
const COINBASE_MATURITY = 100;

/** Exact BTC text from integer sats (no floating point). */
export function btc(sats) {
  const whole = Math.floor(sats / SATS_PER_BTC);
  return `${whole}.${String(sats % SATS_PER_BTC).padStart(8, '0')}`;
}

/**
 * A whole number's digits grouped by thousands ("1,234,567"), as en-US writes
 * them. Not Intl.NumberFormat: the server renders this too, and loading ICU's
 * locale data for it cost every till ~8 MiB (PERFORMANCE.md, twenty-fifth round).
 */
export function groupDigits(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** A fiat amount ("1234567.89") grouped as the sats are ("1,234,567.89"), its digits as the API sent them. */
export function groupedFiat(amount) {
  const [whole, cents] = amount.split('.');
  return cents === undefined ? groupDigits(whole) : `${groupDigits(whole)}.${cents}`;
}

/** Confirmations a payment needs to count as confirmed: a coinbase at least 100, unless the store requires none. */
function confirmationsNeeded(inv, p) {
  const required = inv.confirmations_required;
  return p.coinbase && required > 0 ? Math.max(required, COINBASE_MATURITY) : required;
}

/** "n of m" for the counting payment furthest from confirmed ("0 of required" before any). */
function confirmationProgress(inv) {
  let least = null;
  for (const p of inv.payments.filter((x) => x.status !== 'replaced')) {
    const need = confirmationsNeeded(inv, p);
    const have = Math.min(p.confirmations, need);
    if (least === null || need - have > least.need - least.have) least = { have, need };
  }
  return least === null ? `0 of ${inv.confirmations_required}` : `${least.have} of ${least.need}`;
}

/**
 * What still holds a paid invoice paid (src/domain/invoice-amounts.ts,
 * holdsPaid): payments that count and are in a block (a coinbase: a mature
 * one), or any that count when the store requires no confirmation.
 */
function heldSats(inv) {
  const holds = (p) => p.status !== 'replaced' && (inv.confirmations_required === 0 || (p.status === 'confirmed' && !(p.coinbase && p.confirmations < COINBASE_MATURITY)));
  return inv.payments.filter(holds).reduce((sum, p) => sum + p.amount_sats, 0);
}

/**
 * A paid invoice its payments no longer hold (the merchant was sent
 * invoice.payment_reversed): back in the mempool after a reorg, waiting to be
 * mined again, or replaced by another transaction. Null while they hold it.
 */
function describeReversal(inv, waiting) {
  if (heldSats(inv) >= inv.amount_sats) return null;
  const got = inv.amount_received_sats;
  if (got >= inv.amount_sats) return { state: 'detected', title: 'Paid: confirming again', detail: `The block holding your payment was replaced. ${waiting}` };
  const detail = got > 0
    ? `Received ${btc(got)} of ${btc(inv.amount_sats)} BTC: the rest was replaced by another transaction. Contact the merchant.`
    : 'Your payment was replaced by another transaction and no longer counts. Contact the merchant.';
  return { state: 'underpaid', title: 'Payment reversed', detail };
}

/** A covering payment's surplus (a wallet's own amount, a code scanned twice): the buyer should know, and Till never refunds. */
function surplus(inv) {
  const extra = inv.amount_received_sats - inv.amount_sats;
  // Short enough for the status box's three lines on a 320 px phone.
  return extra > 0 ? `You sent ${btc(extra)} BTC more than asked` : '';
}

/**
 * What the buyer should know now: a state for styling, a headline and a
 * detail line. `serverNow` is the server's clock in ms (the page corrects its
 * own by the snapshot's server_time); `closedFinal` is true once the server
 * ended a live stream as final, which a snapshot made earlier may not say yet.
 */
export function describe(inv, serverNow, closedFinal = false) {
  const due = inv.amount_sats;
  const got = inv.amount_received_sats;
  const waiting = `Waiting for confirmations: ${confirmationProgress(inv)}.`;
  const extra = surplus(inv);
  const refundExtra = `${extra}: the merchant handles any refund.`;
  if (inv.status === 'paid' || inv.status === 'late_paid') {
    const reversal = describeReversal(inv, waiting);
    if (reversal) return reversal;
  }
  switch (inv.status) {
    case 'paid':
      return { state: 'paid', title: 'Paid', detail: extra ? `Confirmed, thank you. ${refundExtra}` : 'Thank you. Your payment is confirmed.' };
    case 'late_paid':
      return { state: 'paid', title: 'Paid after expiry', detail: extra ? `Accepted after expiry. ${refundExtra}` : 'Your payment arrived after the invoice expired and has been accepted.' };
    case 'cancelled':
      // Cancelled while partly paid, or paid after the cancel: the buyer's money is on the invoice.
      if (got > 0) return { state: 'cancelled', title: 'Invoice cancelled', detail: `Received ${btc(got)} BTC. Do not send more: contact the merchant about a refund.` };
      return { state: 'cancelled', title: 'Invoice cancelled', detail: 'Do not send a payment. Ask the merchant for a new invoice.' };
    case 'expired': {
      const refund = `Received ${btc(got)} of ${btc(due)} BTC. Contact the merchant about a refund.`;
      if (got >= due) {
        // Unconfirmed when the late window closed: it can no longer make the invoice paid.
        if (inv.final || closedFinal) return { state: 'underpaid', title: 'Expired: paid too late', detail: refund };
        return { state: 'detected', title: 'Payment detected after expiry', detail: waiting };
      }
      if (got > 0) return { state: 'underpaid', title: 'Expired: underpaid', detail: refund };
      return { state: 'expired', title: 'Invoice expired', detail: 'Do not send a payment to this address. Ask the merchant for a new invoice.' };
    }
    default:
      if (got >= due) return { state: 'detected', title: 'Payment detected', detail: extra ? `${waiting} ${extra}.` : waiting };
      // Past expires_at on the server's clock, not yet expired there (its next check, or a live invoice while Till
      // catches up with the chain): a payment sent now would be late, so none is asked for.
      if (Date.parse(inv.expires_at) <= serverNow) {
        const held = got > 0 ? `Received ${btc(got)} of ${btc(due)} BTC. ` : '';
        return { state: 'expired', title: 'Time is up', detail: `${held}Do not send a payment now: it would arrive after the invoice expired. Checking for payments already sent…` };
      }
      if (got > 0) {
        return { state: 'partial', title: 'Partly paid', detail: `Received ${btc(got)} of ${btc(due)} BTC. Send the remaining ${btc(due - got)} BTC.` };
      }
      return { state: 'pending', title: 'Waiting for payment', detail: 'Scan the code with your wallet, or copy the address and amount.' };
  }
}

/** Whether the page asks for a payment in this state (describe's `state`): the code, the address and the wallet link. */
export const isPayable = (state) => state === 'pending' || state === 'partial';

/** What the page asks to be paid in `state`: what is missing while partly paid, else the invoice's amount. */
export const dueSats = (inv, state) => (state === 'partial' ? inv.amount_sats - inv.amount_received_sats : inv.amount_sats);

/** The wallet link: the invoice's payment_uri, or the same address with what is still missing while partly paid. */
export const walletUri = (inv, state) => (state === 'partial' ? `bitcoin:${inv.address}?amount=${btc(dueSats(inv, state))}` : inv.payment_uri);

/**
 * Cancelled with nothing received: the streams have ended, but a payment sent
 * anyway still joins the invoice for a refund (the buyer was confirming it in
 * their wallet when the shop cancelled), and the page should say so.
 */
export const mayReceiveAfterCancel = (inv) => inv.status === 'cancelled' && inv.amount_received_sats === 0;
