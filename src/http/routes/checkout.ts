import { defineWebSocketHandler, type H3, type H3Event } from 'h3';
import { ApiError, invoiceNotFound } from '../../domain/errors.ts';
import { isId } from '../../ids.ts';
import type { Runtime } from '../../runtime.ts';
import type { DirectGets } from '../internal/direct-get.ts';
import { InvoiceStreams, type OpenedStream } from '../internal/invoice-streams.ts';
import { clientAddress, clientKey, trustedProxySet } from '../internal/client-address.ts';
import { defineRoute, routeParam } from '../internal/route.ts';
import { SnapshotCache } from '../internal/snapshot-cache.ts';
import { parseLastEventId, SSE_HEADERS, SseBody } from '../internal/sse.ts';
import { getRequestId } from '../middleware/request-context.ts';
import { dropIfStuck, WS_CLOSE, wsSink } from '../internal/ws-sink.ts';
import { PUBLIC_CORS_HEADERS, publicCors } from '../middleware/cors.ts';
import { registerCheckoutPage } from './checkout-page.ts';

// The public checkout API (spec 4.2, docs/CHECKOUT.md): no credential, CORS
// for any origin, the invoice id is the capability. A snapshot, then live
// snapshots over SSE or WebSocket, and the hosted page built on them.

/** How stale a polled snapshot may be when no published change evicted it. */
const SNAPSHOT_CACHE = { ttlMs: 1000, max: 5000 };

/**
 * A handshake the WebSocket server will carry out. h3 looks at the Upgrade
 * header alone: without this, a request lacking Connection: Upgrade or a
 * valid key, a HEAD, or a malformed Sec-WebSocket-Protocol got h3's bare 426
 * text (or ws's bare 400 or 405) and was logged as upgraded.
 */
function isCompleteUpgrade(event: H3Event): boolean {
  const h = event.req.headers;
  return (
    event.req.method === 'GET' &&
    isProtocolList(h.get('sec-websocket-protocol')) &&
    h.get('upgrade')?.toLowerCase() === 'websocket' &&
    /(^|,)\s*upgrade\s*(,|$)/i.test(h.get('connection') ?? '') &&
    /^[+/0-9A-Za-z]{22}==$/.test(h.get('sec-websocket-key') ?? '') &&
    (h.get('sec-websocket-version') === '13' || h.get('sec-websocket-version') === '8')
  );
}

const PROTOCOL_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Absent, or the comma-separated distinct tokens ws accepts (else it answers a bare 400 of its own). */
function isProtocolList(value: string | null): boolean {
  if (value === null) return true;
  const names = value.split(',').map((name) => name.trim());
  return names.every((name) => PROTOCOL_TOKEN.test(name)) && new Set(names).size === names.length;
}

/** A GET on the WebSocket endpoint that is not a complete handshake: 426 in the usual error envelope. */
function upgradeRequired(event: H3Event): never {
  event.res.headers.set('upgrade', 'websocket');
  // RFC 6455 4.2.2: the versions spoken, for a client that asked for another.
  event.res.headers.set('sec-websocket-version', '13, 8');
  throw new ApiError('upgrade_required', 'this endpoint is a WebSocket; connect with ws:// or wss://');
}

export function registerCheckoutRoutes(app: H3, rt: Runtime, direct: DirectGets): void {
  const { ctx } = rt;
  const streams = new InvoiceStreams(ctx, rt.externalChanges, {
    heartbeatMs: rt.streamHeartbeatMs,
    maxPerClient: ctx.config.maxStreamsPerClient,
    maxTotal: ctx.config.maxStreamsTotal,
    onError: (err) => rt.logger.error({ err }, 'checkout stream update failed; the stream was ended'),
    stopping: rt.stopping,
  });

  const snapshots = new SnapshotCache(ctx.feed, ctx.clock, SNAPSHOT_CACHE);
  const trustedProxies = trustedProxySet(ctx.config.trustedProxies);
  /** What a stream counts against (an address, an IPv6 /64); requests made in-process have none. */
  const clientOf = (event: H3Event): string => {
    const address = clientAddress(event.req.ip, event.req.headers.get('x-forwarded-for'), trustedProxies);
    return address === undefined ? 'in-process' : clientKey(address);
  };

  app.use('/pay/**', publicCors());

  defineRoute(app, '/pay/invoices/:id', {
    GET: direct.get('/pay/invoices/:id', {
      headers: { ...PUBLIC_CORS_HEADERS, 'cache-control': 'no-store' },
      answer: (req) => {
        const id = req.param('id');
        let json = snapshots.get(id);
        if (json === null) {
          const inv = isId('inv', id) ? ctx.repos.invoices.get(id) : null;
          if (!inv) throw invoiceNotFound(id);
          json = streams.snapshotOf(inv).json;
          snapshots.set(id, json);
        }
        return json;
      },
    }),
  });

  defineRoute(app, '/pay/invoices/:id/events', {
    GET: (event) => {
      const id = routeParam(event, 'id');
      // Answered to an upgrade request, the stream would go out on the raw
      // socket, where nothing tells it the client left: it would hold its slot.
      if (event.req.headers.has('upgrade')) throw new ApiError('validation_error', `the event stream is plain HTTP (send no Upgrade header); the WebSocket is /pay/invoices/${id.slice(0, 64)}/stream`);
      if (!isId('inv', id)) throw invoiceNotFound(id);
      const body = new SseBody();
      const lastVersion = parseLastEventId(event.req.headers.get('last-event-id'));
      const stream = streams.open(id, clientOf(event), body, lastVersion);
      if (!stream) throw invoiceNotFound(id);
      body.onGone = stream.close;
      // Final, and the client already has that state: 204 tells an EventSource
      // to stop reconnecting (a 200 that ends at once would make it retry forever).
      if (stream.closed && !stream.sentSnapshot) return new Response(null, { status: 204 });
      if (!stream.sentSnapshot) body.resumed();
      for (const [name, value] of Object.entries(SSE_HEADERS)) event.res.headers.set(name, value);
      // Returned as it is: srvx pipes it into the Node response (see SseBody).
      return body;
    },
  });

  const upgradeToStream = defineWebSocketHandler((event) => {
    const id = routeParam(event, 'id');
    const client = clientOf(event);
    // Refused before the upgrade, as an HTTP 503 with Retry-After.
    streams.limiter.assertRoom(client);
    let stream: OpenedStream | null = null;
    let gone = false;
    const openStream = (peer: Parameters<typeof wsSink>[0]) => {
      if (gone) return;
      try {
        stream = isId('inv', id) ? streams.open(id, client, wsSink(peer)) : null;
      } catch (err) {
        // Other upgrades took the last slots since the check above.
        if (err instanceof ApiError && err.code === 'stream_limit_reached') {
          peer.close(WS_CLOSE.tryAgainLater.code, WS_CLOSE.tryAgainLater.reason);
          return;
        }
        throw err;
      }
      if (!stream) peer.close(WS_CLOSE.notFound.code, WS_CLOSE.notFound.reason);
    };
    return {
      // The 101 carries the request's id and CORS, as every answer under /pay/ does (browsers do not ask, spec 4.2 does).
      upgrade: () => ({ headers: { ...PUBLIC_CORS_HEADERS, 'x-request-id': getRequestId(event) } }),
      async open(peer) {
        // The first snapshot is read and sent here, after the HTTP answer: like an answer, it waits for a commit's fdatasync.
        try {
          await ctx.writes.whenDurable(() => openStream(peer));
        } catch (err) {
          // crossws leaves a failed hook unhandled, which would end the process.
          rt.logger.error({ err, invoice_id: id.slice(0, 64) }, 'checkout stream failed to open');
          peer.close(WS_CLOSE.internalError.code, WS_CLOSE.internalError.reason);
        }
      },
      ping: dropIfStuck,
      close() {
        gone = true;
        stream?.close();
      },
      error() {
        gone = true;
        stream?.close();
      },
    };
  });
  defineRoute(app, '/pay/invoices/:id/stream', {
    GET: (event) => (isCompleteUpgrade(event) ? upgradeToStream(event) : upgradeRequired(event)),
  });

  registerCheckoutPage(app, rt);
}
