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

/** QR codes kept drawn (an SVG takes ~1 ms to draw, a PNG 5-20): a few per open invoice, as dueUri allows. */
const DRAWN_QR_CODES = 512;

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

  /** What the QR code of the page at `event` asks for (dueUri), or 404 for an unknown invoice. */
  const qrUri = (event: H3Event): string => {
    const id = routeParam(event, 'id');
    const inv = findInvoice(id);
    if (!inv) throw invoiceNotFound(id);
    return dueUri(inv, event.url.searchParams.get('due'));
  };

  // Drawn once per code and kept: a page reloaded, revalidated (304) or opened on many screens costs a lookup.
  const drawn = new Map<string, Promise<Asset>>();
  const drawQrCode = (format: 'svg' | 'png', uri: string): Promise<Asset> => {
    const key = `${format} ${uri}`;
    let asset = drawn.get(key);
    if (!asset) {
      asset =
        format === 'svg'
          ? QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 }).then((svg) => toAsset(svg, 'image/svg+xml'))
          : // Twice the size the page shows it, for sharp pixels on a phone's screen.
            QRCode.toBuffer(uri, { type: 'png', errorCorrectionLevel: 'M', margin: 4, width: 480 }).then((png) => toAsset(new Uint8Array(png), 'image/png'));
      setBounded(drawn, key, asset, DRAWN_QR_CODES);
      asset.catch(() => drawn.delete(key));
    }
    return asset;
  };

  defineRoute(app, '/checkout/:id/qr.svg', {
    GET: async (event) => sendAsset(event, await drawQrCode('svg', qrUri(event)), { headers: { 'content-security-policy': "default-src 'none'" } }),
  });

  // The same code as a PNG, for the page without JavaScript: Tor Browser at its Safest level shows no SVG image.
  defineRoute(app, '/checkout/:id/qr.png', {
    GET: async (event) => sendAsset(event, await drawQrCode('png', qrUri(event))),
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

/**
 * What the QR code asks for: the invoice's payment_uri, or, while a pending
 * invoice is partly paid, the same address with what is still missing, so a
 * buyer who scans again does not pay the whole amount twice. The page names
 * the amount its text shows (`?due=`, sats): what is due now may differ, as a
 * payment can land between the snapshot the page shows and this request, and
 * the browser keeps the image under that URL. Only an amount some page could
 * have shown is drawn (couldShowDue): any other would only make Till draw one
 * more code, each a few milliseconds of its CPU.
 */
export function dueUri(inv: StoredInvoice, asked: string | null = null): string {
  if (asked !== null && /^[1-9][0-9]{0,15}$/.test(asked) && couldShowDue(inv, Number(asked))) return paymentUri(inv.address, Number(asked));
  const received = amountReceived(inv);
  const partial = inv.status === 'pending' && received > 0 && received < inv.amountSats;
  return paymentUri(inv.address, partial ? inv.amountSats - received : inv.amountSats);
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
