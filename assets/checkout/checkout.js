// Till's hosted checkout. It reads the invoice id from its own URL, shows the
// payment request, and follows the invoice live through the public /pay API:
// Server-Sent Events first (WebSocket first unless served over HTTP/2 or 3,
// see defaultTransports), the other when the first does not work, polling as the
// last resort. No dependencies, no inline code (the page's CSP forbids it),
// and only textContent is ever written: store names are not trusted as HTML.
// `?transport=sse|ws|poll` forces one transport (for testing the fallbacks).
// What the page says of an invoice is in describe.js, which the page Till
// renders for browsers without JavaScript says too.

import { btc, describe, dueSats, groupDigits, groupedFiat, isPayable, mayReceiveAfterCancel, walletUri } from './describe.js';

const POLL_MS = { pending: 5000, waiting: 30000 };
/** A stream that passes on no message in this long is held back (a buffering proxy): the next transport. */
const FIRST_MESSAGE_MS = 10000;
/** The longest wait the server asks of EventSource before it reconnects (its `retry:` is 2-5 s). */
const SSE_RETRY_MAX_MS = 5000;
const WS_RETRIES = 3;
/** How often a page on a live stream also asks for the snapshot (see recheckLive). */
const RECHECK_MS = 60000;
/** Longer than a routine reconnect (the WebSocket's first retry after 2 s, EventSource's at most 5 s): one shows nothing. */
const NOTICE_AFTER_MS = 6000;

/** The invoice id in the page's URL; a mistyped one that does not decode (%zz) as it is: the API finds no such invoice either. */
function idFromPath(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const $ = (id) => document.getElementById(id);
const main = $('checkout');
const invoiceId = idFromPath(location.pathname.split('/').filter(Boolean).pop() || '');
// Relative to /checkout/<id>: works behind a proxy that mounts Till under a sub-path.
const apiUrl = new URL(`../pay/invoices/${encodeURIComponent(invoiceId)}`, location.href);
const forced = new URLSearchParams(location.search).get('transport');

let current = null;
/** Counts render() calls: a snapshot fetched while the stream rendered something may be older than it. */
let renders = 0;
/** Server clock minus this device's clock, from the snapshot's server_time. */
let clockOffsetMs = 0;
let countdownTimer = null;
let noticeTimer = null;
let stopLive = () => {};
/** The server closed the WebSocket as final (1000): the snapshot shown, made earlier, may not say `final` yet. */
let final = false;

/** Nothing the buyer waits for can change (paid, late_paid, cancelled, expired past its late window): live updates stop. The server says so. */
function isSettled(inv) {
  return inv.final === true;
}

function setText(id, text) {
  const el = $(id);
  if (el.textContent !== text) el.textContent = text;
}

/** Relative luminance (WCAG) of a #rrggbb colour. */
function luminance(hex) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** Readable text on the brand colour: black or white. */
const textOn = (hex) => (luminance(hex) > 0.179 ? '#000000' : '#ffffff');

/** A brand colour under 3:1 against the white card (WCAG 1.4.11) gets its buttons an edge: they would melt into the card. */
const edgeOn = (hex) => (1.05 / (luminance(hex) + 0.05) < 3 ? 'var(--muted)' : 'transparent');

function renderStore(store, livemode) {
  setText('store-name', store.name);
  document.title = `Pay ${store.name}`;
  const logo = $('store-logo');
  if (store.logo_url && logo.getAttribute('src') !== store.logo_url) {
    logo.addEventListener('error', () => (logo.hidden = true), { once: true });
    logo.src = store.logo_url;
    logo.hidden = false;
  }
  if (store.brand_color && /^#[0-9a-fA-F]{6}$/.test(store.brand_color)) {
    document.documentElement.style.setProperty('--brand', store.brand_color);
    document.documentElement.style.setProperty('--on-brand', textOn(store.brand_color));
    document.documentElement.style.setProperty('--brand-edge', edgeOn(store.brand_color));
  }
  $('test-mode').hidden = livemode;
}

function render(inv) {
  // Only a snapshot just received says the server's time now (render(current) shows the same one again).
  if (inv !== current) clockOffsetMs = Date.parse(inv.server_time) - Date.now();
  current = inv;
  renders++;
  const { state, title, detail } = describe(inv, Date.now() + clockOffsetMs, final);
  main.dataset.state = state;
  main.setAttribute('aria-busy', 'false');
  renderStore(inv.store, inv.livemode);
  setText('status', title);
  setText('status-detail', detail);

  const due = dueSats(inv, state);
  setText('amount-btc', btc(due));
  setText('amount-sats', `${groupDigits(due)} sats`);
  setText('amount-fiat', inv.amount && inv.currency && state !== 'partial' ? `≈ ${groupedFiat(inv.amount)} ${inv.currency}` : '');
  if ($('address').value !== inv.address) {
    $('address').value = inv.address;
    fitAddress();
  }
  $('amount').value = btc(due);
  setText('invoice-id', inv.id);

  const payable = isPayable(state);
  const qr = $('qr');
  // The server encodes what is still due; a new amount means a new code.
  const qrSrc = `${encodeURIComponent(inv.id)}/qr.svg?due=${due}`;
  if (qr.getAttribute('src') !== qrSrc) qr.src = qrSrc;
  qr.hidden = !payable;
  // Its caption says "Scan…": a screen reader must not offer an empty figure to scan once there is nothing to pay.
  qr.closest('figure').setAttribute('aria-hidden', String(!payable));
  const wallet = $('open-wallet');
  wallet.href = walletUri(inv, state);
  wallet.hidden = !payable;
  for (const id of ['copy-address', 'copy-amount']) $(id).disabled = !payable;

  updateCountdown();
  if (isSettled(inv)) {
    stopLive();
    clearConnectionLost();
  }
}

/**
 * The live updates stopped (a dropped connection, a server restarting): the
 * status shown may be stale. Said discreetly once it lasts, so a quick
 * reconnect shows nothing; the next message from the server clears it.
 */
function noteConnectionLost() {
  noticeTimer ??= setTimeout(() => setText('connection', 'Connection lost. Reconnecting…'), NOTICE_AFTER_MS);
}

function clearConnectionLost() {
  clearTimeout(noticeTimer);
  noticeTimer = null;
  setText('connection', '');
}

/** As many rows as the address needs at this width (a taproot address takes four on a small phone): buyers compare all of it with their wallet's. */
function fitAddress() {
  const el = $('address');
  el.rows = 2;
  while (el.scrollHeight > el.clientHeight && el.rows < 8) el.rows++;
}

function updateCountdown() {
  const inv = current;
  const show = inv && inv.status === 'pending' && inv.amount_received_sats < inv.amount_sats;
  const box = $('countdown');
  box.classList.toggle('is-hidden', !show);
  if (!show) {
    clearInterval(countdownTimer);
    countdownTimer = null;
    return;
  }
  countdownTimer ??= setInterval(updateCountdown, 1000);
  const left = Math.max(0, Date.parse(inv.expires_at) - (Date.now() + clockOffsetMs));
  // The moment time is up, the page stops asking for a payment (describe says why).
  if (left === 0 && (main.dataset.state === 'pending' || main.dataset.state === 'partial')) return render(inv);
  const s = Math.floor(left / 1000);
  const hh = Math.floor(s / 3600);
  const mm = String(Math.floor((s % 3600) / 60)).padStart(hh ? 2 : 1, '0');
  const ss = String(s % 60).padStart(2, '0');
  setText('countdown-label', left > 0 ? 'Expires in' : 'Expiring');
  setText('countdown-time', left > 0 ? (hh ? `${hh}:${mm}:${ss}` : `${mm}:${ss}`) : '…');
  $('countdown-time').dateTime = `PT${s}S`;
}

function showProblem(state, title, detail) {
  main.dataset.state = state;
  main.setAttribute('aria-busy', 'false');
  setText('status', title);
  setText('status-detail', detail);
}

async function fetchSnapshot() {
  const res = await fetch(apiUrl, { cache: 'no-store' });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.json();
}

// Live transports. Each calls `fallback()` when it never delivered a
// snapshot (blocked by a proxy, not supported), or when the server ended it
// for good while the invoice is not settled (Till could not read its
// database): the next transport, and at last polling, keeps the page going.

function viaEventSource(fallback) {
  const es = new EventSource(new URL(`${apiUrl.pathname}/events`, location.href));
  let delivered = false;
  let watchdog = null;
  // Each connection's first message is a snapshot. None in time (a buffering proxy holds the stream back),
  // on the first connection or on a reconnect (the page would go quiet for good): the next transport.
  const watch = (ms) => {
    clearTimeout(watchdog);
    watchdog = setTimeout(() => (stop(), fallback()), ms);
  };
  const stop = () => {
    clearTimeout(watchdog);
    es.close();
  };
  watch(FIRST_MESSAGE_MS);
  es.addEventListener('invoice', (e) => {
    clearTimeout(watchdog);
    clearConnectionLost();
    delivered = true;
    render(JSON.parse(e.data));
  });
  // A reconnect that missed nothing gets this instead of a snapshot.
  es.addEventListener('resumed', () => (clearTimeout(watchdog), clearConnectionLost()));
  es.addEventListener('error', () => {
    // CONNECTING: the browser reconnects by itself, after the server's retry wait. CLOSED: it gave up,
    // on a 204 ("final") or on an error status such as a 503.
    if (es.readyState !== EventSource.CLOSED) return noteConnectionLost(), watch(SSE_RETRY_MAX_MS + FIRST_MESSAGE_MS);
    stop();
    if (!delivered || !isSettled(current)) noteConnectionLost(), fallback();
  });
  return stop;
}

function viaWebSocket(fallback) {
  let ws = null;
  let delivered = false;
  let stopped = false;
  let tries = 0;
  let watchdog = null;
  const stop = () => {
    stopped = true;
    clearTimeout(watchdog);
    ws?.close();
  };
  const connect = () => {
    const url = new URL(`${apiUrl.pathname}/stream`, location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    ws = new WebSocket(url);
    // Each connection's first message is a snapshot. Upgraded, then nothing passed on (a proxy holding the
    // frames back), as for SSE: the next transport, on a reconnect too (the page would go quiet for good).
    watchdog = setTimeout(() => {
      stop();
      fallback();
    }, FIRST_MESSAGE_MS);
    ws.addEventListener('message', (e) => {
      clearTimeout(watchdog);
      const msg = JSON.parse(e.data);
      if (msg.type !== 'invoice') return;
      clearConnectionLost();
      delivered = true;
      tries = 0;
      render(msg.data);
    });
    ws.addEventListener('close', (e) => {
      clearTimeout(watchdog);
      if (stopped) return;
      if (e.code === 1000) {
        final = true;
        if (current) render(current);
        return;
      }
      if (e.code === 4404) return showNotFound();
      noteConnectionLost();
      // 1013: the server cannot serve a stream now (its database failed, or its stream limit): the next transport.
      if (e.code === 1013 || !delivered || ++tries > WS_RETRIES) return stop(), fallback();
      setTimeout(() => stopped || connect(), 1000 * 2 ** tries);
    });
  };
  connect();
  return stop;
}

function viaPolling() {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    try {
      const inv = await fetchSnapshot();
      if (stopped) return;
      if (!inv) return showNotFound();
      clearConnectionLost();
      render(inv);
    } catch {
      // Offline for a moment: the next tick tries again.
      noteConnectionLost();
    }
    if (!stopped && !isSettled(current ?? { status: 'pending' })) {
      timer = setTimeout(tick, current?.status === 'pending' ? POLL_MS.pending : POLL_MS.waiting);
    }
  };
  timer = setTimeout(tick, POLL_MS.pending);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * Over HTTP/1.1 a browser opens at most 6 connections to a host, and an
 * EventSource holds one for as long as the page is open: a seventh checkout
 * tab would never load. A WebSocket does not count against them.
 * The protocol is read from the snapshot's fetch (no-store, so always from the
 * network): a page revalidated from the cache (a reload, a second tab of the
 * same invoice) reports none for its navigation. Unknown: WebSocket first,
 * which cannot starve the page's own loads.
 */
function defaultTransports() {
  const [snapshot] = performance.getEntriesByName(apiUrl.href, 'resource').slice(-1);
  const protocol = snapshot?.nextHopProtocol || performance.getEntriesByType('navigation')[0]?.nextHopProtocol || '';
  return /^h2|^h3/.test(protocol) ? ['sse', 'ws', 'poll'] : ['ws', 'sse', 'poll'];
}

function goLive() {
  const chain = { sse: ['sse', 'ws', 'poll'], ws: ['ws', 'poll'], poll: ['poll'] }[forced] ?? defaultTransports();
  const start = (i) => {
    const kind = chain[i];
    main.dataset.transport = kind;
    const next = () => start(i + 1);
    if (kind === 'sse' && 'EventSource' in window) stopLive = viaEventSource(next);
    else if (kind === 'ws' && 'WebSocket' in window) stopLive = viaWebSocket(next);
    else if (kind === 'poll') stopLive = viaPolling();
    else next();
  };
  start(0);
}

/** The invoice as shown, without the moment it was sent. */
const shownAs = (inv) => JSON.stringify({ ...inv, server_time: null });

/**
 * A stream whose connection died without a word (the phone changed networks, a
 * NAT forgot it) never says so, and the page would wait for ever. Coming back
 * into view (from the wallet app, say) and once a minute, a page on a stream
 * asks for the snapshot too: one showing a change the stream never brought
 * means the stream is dead, and it is started again. A page cancelled with
 * nothing received asks too (mayReceiveAfterCancel).
 */
async function recheckLive() {
  if (!current) return;
  if (!mayReceiveAfterCancel(current) && (!['sse', 'ws'].includes(main.dataset.transport) || isSettled(current))) return;
  const before = renders;
  let inv;
  try {
    inv = await fetchSnapshot();
  } catch {
    return; // Offline: the stream, if alive, and the next check go on.
  }
  if (!inv || renders !== before || shownAs(inv) === shownAs(current)) return;
  stopLive();
  render(inv);
  if (!isSettled(inv)) goLive();
}

function showNotFound() {
  stopLive();
  clearConnectionLost();
  showProblem('notfound', 'Invoice not found', 'Check the link you were given, or ask the merchant for a new one.');
}

/** Says `text` in the copy live region, also when it says the same again (a region only announces a change). */
function announceCopy(text) {
  setText('copy-feedback', '');
  requestAnimationFrame(() => setText('copy-feedback', text));
}

async function copy(button) {
  const input = $(button.dataset.copy);
  const label = button.dataset.copy === 'address' ? 'Address' : 'Amount';
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    // No clipboard API (plain http): select the text for the buyer instead.
    input.focus();
    input.select();
    if (!document.execCommand('copy')) {
      announceCopy(`${label} selected: copy it with your keyboard`);
      return;
    }
  }
  button.textContent = 'Copied';
  announceCopy(`${label} copied`);
  setTimeout(() => (button.textContent = 'Copy'), 2000);
}

async function start() {
  for (const b of document.querySelectorAll('button[data-copy]')) b.addEventListener('click', () => copy(b));
  // A turned phone or a larger font wraps the address differently.
  addEventListener('resize', fitAddress);
  for (let attempt = 0; ; attempt++) {
    try {
      const inv = await fetchSnapshot();
      if (!inv) return showNotFound();
      render(inv);
      break;
    } catch {
      showProblem('offline', 'Cannot reach the payment server', 'Retrying…');
      await new Promise((r) => setTimeout(r, Math.min(30000, 1000 * 2 ** attempt)));
    }
  }
  if (!isSettled(current)) goLive();
  setInterval(recheckLive, RECHECK_MS);
  document.addEventListener('visibilitychange', () => document.visibilityState === 'visible' && recheckLive());
}

start();
