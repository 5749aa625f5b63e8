import { btc, describe, dueSats, groupDigits, groupedFiat, isPayable, mayReceiveAfterCancel, walletUri } from '../../../assets/checkout/describe.js';
import type { CheckoutView } from './checkout-view.ts';

// The hosted checkout for a browser without JavaScript (Tor Browser at its
// Safest level, say): the same page rendered by the server from the same
// snapshot and the same words (assets/checkout/describe.js), reloaded by a
// meta refresh instead of a live stream. No script, no inline style: the
// page's CSP holds as it is. docs/CHECKOUT.md, "Without JavaScript".

/** How often the page reloads, in seconds, while something the buyer waits for can change. */
export const PLAIN_REFRESH_SECONDS = {
  /** A pending invoice not yet covered: reloading costs more than the script's poll, and drops a selection. */
  awaitingPayment: 20,
  /** Confirmations (about every ten minutes), a late payment, one sent after a cancel. */
  awaitingChain: 60,
};

/** Escapes text for an HTML text node or a double-quoted attribute. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Seconds until the next reload, or null once nothing the buyer waits for can change. */
function refreshSeconds(view: CheckoutView, state: string): number | null {
  if (view.final) return mayReceiveAfterCancel(view) ? PLAIN_REFRESH_SECONDS.awaitingChain : null;
  return view.status === 'pending' && state !== 'detected' ? PLAIN_REFRESH_SECONDS.awaitingPayment : PLAIN_REFRESH_SECONDS.awaitingChain;
}

/** "Expires in 14 minutes (12:34 UTC)": the buyer's time zone is not known without a script. */
function expiryText(view: CheckoutView, now: number): string {
  const left = Date.parse(view.expires_at) - now;
  const minutes = Math.floor(left / 60_000);
  const within = minutes < 1 ? 'in less than a minute' : minutes === 1 ? 'in 1 minute' : `in ${minutes} minutes`;
  return `Expires ${within} (${view.expires_at.slice(11, 16)} UTC)`;
}

/**
 * The page for an invoice's snapshot at the server's `now`. Relative URLs as
 * on the scripted page (it is served at /checkout/<id>?plain), and the same
 * ids on the same parts (the browser tests find both pages' parts alike).
 */
export function renderPlainCheckout(view: CheckoutView, now: number): string {
  const { state, title, detail } = describe(view, now);
  const payable = isPayable(state);
  const due = dueSats(view, state);
  const refresh = refreshSeconds(view, state);
  const showExpiry = view.status === 'pending' && view.amount_received_sats < view.amount_sats && Date.parse(view.expires_at) > now;
  const fiat = view.amount && view.currency && state !== 'partial' ? `≈ ${groupedFiat(view.amount)} ${view.currency}` : '';
  // A PNG, not the scripted page's SVG: Tor Browser at its Safest level (a reason to be here) shows no SVG.
  const qrSrc = `${encodeURIComponent(view.id)}/qr.png?due=${due}`;
  return page({
    title: `Pay ${view.store.name}`,
    refresh,
    state,
    body: `
    <header class="store">
      ${view.store.logo_url ? `<img class="store-logo" src="${escapeHtml(view.store.logo_url)}" alt="" width="40" height="40">` : ''}
      <h1 id="store-name" class="store-name">${escapeHtml(view.store.name)}</h1>
    </header>
    ${view.livemode ? '' : '<p class="test-mode">Test mode: do not send real bitcoin.</p>'}
    <section class="status-box" aria-label="Payment status">
      <p id="status" class="status">${escapeHtml(title)}</p>
      <p id="status-detail" class="status-detail">${escapeHtml(detail)}</p>
    </section>
    <section class="amount" aria-label="Amount to pay">
      <p class="amount-btc"><span>${btc(due)}</span> <abbr title="bitcoin">BTC</abbr></p>
      <p class="amount-sub"><span>${groupDigits(due)} sats</span> <span>${escapeHtml(fiat)}</span></p>
    </section>
    <figure class="qr"${payable ? '' : ' aria-hidden="true"'}>
      ${payable ? `<img id="qr" class="qr-image" src="${escapeHtml(qrSrc)}" alt="QR code of the payment request: scan it with your Bitcoin wallet" width="240" height="240">` : ''}
      <div class="qr-result" aria-hidden="true"></div>
    </figure>
    <dl class="fields">
      <div class="field"><dt>Address</dt><dd id="address" class="mono plain-value">${escapeHtml(view.address)}</dd></div>
      <div class="field"><dt>Amount (BTC)</dt><dd id="amount" class="mono plain-value">${btc(due)}</dd></div>
    </dl>
    <a id="open-wallet" class="wallet-link" href="${escapeHtml(walletUri(view, state))}"${payable ? '' : ' hidden'}>Open in wallet</a>
    <p id="countdown" class="countdown${showExpiry ? '' : ' is-hidden'}">${showExpiry ? escapeHtml(expiryText(view, now)) : ''}</p>
    <p class="plain-refresh">${refresh === null ? '' : `This page updates itself every ${refresh} seconds. <a href="">Update now</a>`}</p>
    <footer class="footer">
      <span id="invoice-id" class="mono">${escapeHtml(view.id)}</span>
      <span>Processed by Till, a self-hosted Bitcoin till</span>
    </footer>`,
  });
}

/** The plain page of an invoice that does not exist (served with a 404). */
export function renderPlainNotFound(): string {
  return page({
    title: 'Bitcoin payment',
    refresh: null,
    state: 'notfound',
    body: `
    <header class="store"><h1 id="store-name" class="store-name">Bitcoin payment</h1></header>
    <section class="status-box" aria-label="Payment status">
      <p id="status" class="status">Invoice not found</p>
      <p class="status-detail">Check the link you were given, or ask the merchant for a new one.</p>
    </section>
    <figure class="qr" aria-hidden="true"><div class="qr-result"></div></figure>`,
  });
}

function page({ title, refresh, state, body }: { title: string; refresh: number | null; state: string; body: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="referrer" content="no-referrer">
  <meta name="robots" content="noindex">
  ${refresh === null ? '' : `<meta http-equiv="refresh" content="${refresh}">`}
  <title>${escapeHtml(title)}</title>
  <link rel="icon" href="assets/favicon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="assets/checkout.css">
</head>
<body>
  <main class="checkout plain" data-state="${escapeHtml(state)}" aria-labelledby="store-name">${body}
  </main>
</body>
</html>
`;
}
