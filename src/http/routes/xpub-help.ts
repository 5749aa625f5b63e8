import type { H3 } from 'h3';
import { ApiError } from '../../domain/errors.ts';
import type { TillNetwork } from '../../bitcoin/networks.ts';
import { isId } from '../../ids.ts';
import { defineRoute, routeParam } from '../internal/route.ts';

// Till has no web dashboard. 409 no_active_xpub links to
// {dashboard_url}/stores/<id>/xpubs (spec 7.1); without a dashboard_url the
// link is Till's own, and this page says how to fix it with the CLI. It reads
// nothing: it answers every well-formed store id alike, so it tells no one
// which stores exist.

/** The key forms a live key takes on this Till's network (test keys may be of any network, spec 1). */
function liveKeyForms(network: TillNetwork): { forms: string; placeholder: string } {
  return network === 'main' ? { forms: 'xpub, ypub, zpub', placeholder: '<xpub>' } : { forms: `tpub, upub, vpub: this Till runs on ${network === 'test' ? 'testnet' : network}`, placeholder: '<tpub>' };
}

export function registerXpubHelpRoute(app: H3, network: TillNetwork): void {
  const live = liveKeyForms(network);
  defineRoute(app, '/stores/:id/xpubs', {
    GET: (event) => {
      const id = routeParam(event, 'id');
      if (!isId('sto', id)) throw new ApiError('not_found', 'not found');
      const text =
        `Till has no web dashboard: a store's xpubs are managed with its CLI, on the machine Till runs on.\n\n` +
        `Add the store's extended public key for live invoices (${live.forms}; or a descriptor such as wpkh(…) around one) and for test invoices (any network's key, a testnet tpub, upub or vpub most often):\n\n` +
        `  till xpub add --store ${id} --env live ${live.placeholder}\n` +
        `  till xpub add --store ${id} --env test <tpub>\n\n` +
        `Then retry the request. \`till xpub list --store ${id}\` shows what the store has; \`till xpub add --help\` tells more.\n`;
      return new Response(text, { headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' } });
    },
  });
}
