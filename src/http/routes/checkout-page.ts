import type { H3, H3Event } from 'h3';
import QRCode from 'qrcode';
import type { StoredInvoice } from '../../db/invoices.ts';
import { ApiError, invoiceNotFound } from '../../domain/errors.ts';
import { amountReceived } from '../../domain/invoice-state.ts';
import { paymentUri } from '../../domain/invoice-view.ts';
import { isId } from '../../ids.ts';
import type { Runtime } from '../../runtime.ts';
import { readAsset, sendAsset, toAsset, type Asset } from '../assets.ts';
import { currentCheckoutView } from '../internal/checkout-view.ts';
import { renderPlainCheckout, renderPlainNotFound } from '../internal/plain-checkout.ts';
import { defineRoute, routeParam } from '../internal/route.ts';
import { setBounded } from '../../set-bounded.ts';

// The hosted checkout page (DESIGN.md "Checkout"): one static page for every
// invoice, which reads the invoice id from its own URL and talks to the public
// /pay API like a merchant's own checkout would; and, at /checkout/<id>?plain,
// the same page rendered here for a browser without JavaScript. Their files
// are referenced by relative URLs, so Till also works behind a proxy under a
// sub-path.

/** No inline script or style, no third party but the store's logo (an http(s) URL). */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' https: http:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const PAGE_HEADERS = {
  'content-security-policy': PAGE_CSP,
  // The invoice id in the URL is a capability: the logo host must not see it.
  'referrer-policy': 'no-referrer',
};

const PAGE_FILES = new Set(['checkout.css', 'checkout.js', 'describe.js', 'favicon.svg']);

/** Invoices whose QR codes are kept drawn (an SVG takes ~1 ms to draw, a PNG 5-20), the first drawn dropped first. */
const KEPT_INVOICES = 256;
/**
 * Codes kept per invoice. An amount other than what is due now is drawn only
 * while its invoice has fewer: a page shows an older amount for a moment only,
 * and a crafted link (any amount a page could have shown, which many payments
 * make many) must not make Till draw code after code.
 */
const CODES_PER_INVOICE = 8;

export function registerCheckoutPage(app: H3, rt: Runtime): void {
  const { ctx } = rt;
  const findInvoice = (id: string): StoredInvoice | null => (isId('inv', id) ? ctx.repos.invoices.get(id) : null);

  defineRoute(app, '/checkout/assets/:name', {
    GET: (event) => {
      const name = routeParam(event, 'name');
      const asset = PAGE_FILES.has(name) ? readAsset(`checkout/${name}`) : null;
      if (!asset) throw new ApiError('not_found', `no checkout asset ${name.slice(0, 64)}`);
      return sendAsset(event, asset);
    },
  });

  const sendPage = (event: H3Event, known: boolean) => {
    const page = readAsset('checkout/index.html');
    if (!page) throw new Error('assets/checkout/index.html is missing from this build');
    // An unknown invoice still gets the page (it says so in words), with a 404 status.
    return sendAsset(event, page, { status: known ? 200 : 404, headers: PAGE_HEADERS });
  };

  /** The page rendered here for a browser without JavaScript, which the static page's <noscript> sends it to. */
  const sendPlainPage = (event: H3Event, inv: StoredInvoice | null) => {
    const html = inv ? renderPlainCheckout(currentCheckoutView(ctx, inv), ctx.clock.now()) : renderPlainNotFound();
    return sendAsset(event, toAsset(html, 'text/html; charset=utf-8'), { status: inv ? 200 : 404, headers: PAGE_HEADERS });
  };

  defineRoute(app, '/checkout/:id', {
    GET: (event) => {
      // The page's files are relative (it may be served under a proxy's prefix): /checkout/<id>/ would look for them
      // under the id. The segment goes back as it came, so one that does not decode (%zz) reaches the page too.
      if (event.url.pathname.endsWith('/')) {
        return new Response(null, { status: 308, headers: { location: `../${event.context.params!.id}${event.url.search}` } });
      }
      const inv = findInvoice(pageInvoiceId(event));
      return event.url.searchParams.has('plain') ? sendPlainPage(event, inv) : sendPage(event, inv !== null);
    },
  });

  // A link cut short before its id: the page, which says the invoice is not found; from /checkout/, where its files
  // resolve (the router takes /checkout for it too). Without JavaScript the page sends the browser to ?plain: the
  // plain "not found" (the page again would send it there again, forever).
  defineRoute(app, '/checkout/', {
    GET: (event) => {
      if (!event.url.pathname.endsWith('/')) return new Response(null, { status: 308, headers: { location: `checkout/${event.url.search}` } });
      return event.url.searchParams.has('plain') ? sendPlainPage(event, null) : sendPage(event, false);
    },
  });

  // Drawn once per code and kept: a page reloaded, revalidated (304) or opened on many screens costs a lookup.
  const kept = new Map<string, Map<string, Promise<Asset>>>();
  /** The code of the amount the page at `event` shows (see dueNow), or 404 for an unknown invoice. */
  const qrCode = (event: H3Event, format: 'svg' | 'png'): Promise<Asset> => {
    const id = routeParam(event, 'id');
    const inv = findInvoice(id);
    if (!inv) throw invoiceNotFound(id);
    let codes = kept.get(inv.id);
    if (!codes) setBounded(kept, inv.id, (codes = new Map()), KEPT_INVOICES);
    const now = dueNow(inv);
    const asked = askedDue(event.url.searchParams.get('due'));
    const older = asked !== null && asked !== now && (codes.has(`${format} ${asked}`) || (codes.size < CODES_PER_INVOICE && couldShowDue(inv, asked)));
    const due = older ? asked : now;
    const key = `${format} ${due}`;
    let code = codes.get(key);
    if (!code) {
      code = drawQrCode(format, paymentUri(inv.address, due));
      setBounded(codes, key, code, CODES_PER_INVOICE);
      code.catch(() => codes.delete(key));
    }
    return code;
  };

  defineRoute(app, '/checkout/:id/qr.svg', {
    GET: async (event) => sendAsset(event, await qrCode(event, 'svg'), { headers: { 'content-security-policy': "default-src 'none'" } }),
  });

  // The same code as a PNG, for the page without JavaScript: Tor Browser at its Safest level shows no SVG image.
  defineRoute(app, '/checkout/:id/qr.png', {
    GET: async (event) => sendAsset(event, await qrCode(event, 'png')),
  });
}

/** The invoice id in a page's URL; '' for a mistyped link that does not decode, which gets the page's "not found" too. */
function pageInvoiceId(event: H3Event): string {
  try {
    return routeParam(event, 'id');
  } catch {
    return '';
  }
}

function drawQrCode(format: 'svg' | 'png', uri: string): Promise<Asset> {
  return format === 'svg'
    ? QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 }).then((svg) => toAsset(svg, 'image/svg+xml'))
    : // Twice the size the page shows it, for sharp pixels on a phone's screen.
      QRCode.toBuffer(uri, { type: 'png', errorCorrectionLevel: 'M', margin: 4, width: 480 }).then((png) => toAsset(new Uint8Array(png), 'image/png'));
}

/**
 * What the QR code asks for: the invoice's amount, or, while a pending invoice
 * is partly paid, what is still missing, so a buyer who scans again does not
 * pay the whole amount twice. The page names the amount its text shows
 * (`?due=`, sats): what is due now may differ, as a payment can land between
 * the snapshot the page shows and this request, and the browser keeps the
 * image under that URL. Such an older amount is drawn if a page could have
 * shown it (couldShowDue), within CODES_PER_INVOICE.
 */
function dueNow(inv: StoredInvoice): number {
  const received = amountReceived(inv);
  const partial = inv.status === 'pending' && received > 0 && received < inv.amountSats;
  return partial ? inv.amountSats - received : inv.amountSats;
}

/** `?due=` as a whole number of sats, or null. */
function askedDue(asked: string | null): number | null {
  return asked !== null && /^[1-9][0-9]{0,15}$/.test(asked) ? Number(asked) : null;
}

/** An invoice's payments past this many: any due up to the amount passes (their sums are not listed). */
const MAX_SUMMED_PAYMENTS = 12;

/**
 * Whether a checkout page could have shown `due`: the amount, or the amount
 * less what some of the invoice's payments sum to (a payment counts at one
 * time and not at another, as it is replaced or its block reorged away).
 */
function couldShowDue(inv: StoredInvoice, due: number): boolean {
  if (due === inv.amountSats) return true;
  if (due > inv.amountSats) return false;
  if (inv.payments.length > MAX_SUMMED_PAYMENTS) return true;
  const sums = new Set([0]);
  for (const p of inv.payments) for (const sum of [...sums]) sums.add(sum + p.amountSats);
  return sums.has(inv.amountSats - due);
}
