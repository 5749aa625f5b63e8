import type { H3 } from 'h3';
import { ApiError } from '../../domain/errors.ts';
import { isId } from '../../ids.ts';
import { defineRoute, routeParam } from '../internal/route.ts';

// Till has no web dashboard. 409 no_active_xpub links to
// {dashboard_url}/stores/<id>/xpubs (spec 7.1); without a dashboard_url the
// link is Till's own, and this page says how to fix it with the CLI. It reads
// nothing: it answers every well-formed store id alike, so it tells no one
// which stores exist.

export function registerXpubHelpRoute(app: H3): void {
  defineRoute(app, '/stores/:id/xpubs', {
    GET: (event) => {
      const id = routeParam(event, 'id');
      if (!isId('sto', id)) throw new ApiError('not_found', 'not found');
      const text =
        `Till has no web dashboard: a store's xpubs are managed with its CLI, on the machine Till runs on.\n\n` +
        `Add the store's extended public key for live invoices (xpub, ypub, zpub, or a descriptor such as wpkh(…)) and for test invoices (tpub, upub, vpub):\n\n` +
        `  till xpub add --store ${id} --env live <xpub>\n` +
        `  till xpub add --store ${id} --env test <tpub>\n\n` +
        `Then retry the request. \`till xpub list --store ${id}\` shows what the store has; \`till xpub add --help\` tells more.\n`;
      return new Response(text, { headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' } });
    },
  });
}
