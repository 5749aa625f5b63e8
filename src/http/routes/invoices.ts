import type { H3 } from 'h3';
import type { InvoicesRepo, ListQuery } from '../../db/invoices.ts';
import { invalidField, unknownName } from '../../domain/errors.ts';
import { INVOICE_STATUSES, type InvoiceStatus } from '../../domain/invoice.ts';
import { parseAmountSats, parseInvoiceRequest } from '../../domain/invoice-request.ts';
import { invoiceView } from '../../domain/invoice-view.ts';
import { SIMULATED_EVENTS, type SimulatedEvent } from '../../domain/simulate.ts';
import { isId } from '../../ids.ts';
import type { Runtime } from '../../runtime.ts';
import { cancelInvoice, createInvoice, getInvoiceFor, hashRequest, simulateInvoice } from '../../services/invoices.ts';
import { requireApiKey, requireApiKeyOf } from '../middleware/auth.ts';
import { SlidingWindowLimiter } from '../middleware/rate-limit.ts';
import { readsDone } from '../internal/after-reads.ts';
import { readJsonObject, readNoParams } from '../internal/body.ts';
import { assertNoQuery } from '../internal/query.ts';
import type { DirectRequest } from '../internal/direct-request.ts';
import type { DirectRoutes } from '../internal/direct-routes.ts';
import { InvoiceViewCache } from '../internal/invoice-view-cache.ts';
import { defineRoute, routeParam } from '../internal/route.ts';

export const CREATE_RATE_LIMIT = { perMinute: 100 } as const;
export const LIST_LIMIT = { default: 20, max: 100 } as const;
const IDEMPOTENCY_KEY_MAX = 255;

function readIdempotencyKey(req: DirectRequest): string | null {
  // Sent twice, the values arrive joined by ", ": a key of its own that neither retry would send alone.
  if (req.repeats('idempotency-key')) {
    throw invalidField('Idempotency-Key', 'the Idempotency-Key header is given more than once; send one');
  }
  const key = req.header('idempotency-key');
  if (key === null) return null;
  // Header values arrive as bytes (one char each); spec 8 counts characters of the UTF-8 text.
  const characters = [...Buffer.from(key, 'latin1').toString('utf8')].length;
  if (characters === 0 || characters > IDEMPOTENCY_KEY_MAX) {
    throw invalidField('Idempotency-Key', `the Idempotency-Key header must be 1 to ${IDEMPOTENCY_KEY_MAX} characters`);
  }
  return key;
}

/** Answered with a stored answer of its Idempotency-Key (spec 8). */
const REPLAYED = { 'idempotent-replayed': 'true' } as const;

export function registerInvoiceRoutes(app: H3, rt: Runtime, direct: DirectRoutes): void {
  const { ctx } = rt;
  const limiter = new SlidingWindowLimiter(CREATE_RATE_LIMIT.perMinute, 60_000, ctx.clock);
  const views = new InvoiceViewCache(ctx);

  defineRoute(app, '/v1/invoices', {
    POST: direct.posts.post('/v1/invoices', {
      answer: async (req, body) => {
        // Creations of a turn are handled together once its requests are read.
        await readsDone();
        const caller = requireApiKeyOf(req, ctx);
        const idempotencyKey = readIdempotencyKey(req);
        const value = await body();
        const result = await createInvoice(ctx, {
          caller,
          idempotencyKey,
          // Only an Idempotency-Key's replay check compares it.
          requestHash: idempotencyKey ? hashRequest(value) : '',
          parse: () => parseInvoiceRequest(value),
          admit: () => limiter.take(caller.apiKey.id),
        });
        return { status: result.status, json: result.body, headers: result.replayed ? REPLAYED : undefined };
      },
    }),
    GET: direct.gets.get('/v1/invoices', {
      answer: (req) => {
        const caller = requireApiKeyOf(req, ctx);
        const q = { ...parseListQuery(req.query), storeId: caller.store.id, livemode: caller.apiKey.env === 'live' };
        const pageKey = JSON.stringify(q);
        const cached = views.page(q.storeId, pageKey);
        if (cached !== undefined) return cached;
        assertCursorListed(ctx.repos.invoices, q);
        const ids = ctx.repos.invoices.listIds(q);
        const hasMore = ids.length > q.limit;
        const page = ids.slice(0, q.limit);
        if (q.endingBefore && !q.startingAfter) page.reverse();
        // The page's ids come from the index; only views not cached are read and built.
        const found = views.getAll(page);
        for (const inv of ctx.repos.invoices.getMany(page.filter((id) => !found.has(id)))) found.set(inv.id, views.viewOf(inv));
        const json = `{"object":"list","url":"/v1/invoices","has_more":${hasMore},"data":[${page.map((id) => found.get(id)).join(',')}]}`;
        views.setPage(q.storeId, pageKey, json);
        return json;
      },
    }),
  });

  defineRoute(app, '/v1/invoices/:id', {
    GET: direct.gets.get('/v1/invoices/:id', {
      answer: (req) => {
        const caller = requireApiKeyOf(req, ctx);
        assertNoQuery(req.query);
        const id = req.param('id');
        const cached = views.get(id);
        // A cached view of another store's or environment's invoice takes the uncached path to its 404.
        if (cached && cached.storeId === caller.store.id && cached.livemode === (caller.apiKey.env === 'live')) return cached.json;
        return views.viewOf(getInvoiceFor(ctx, caller, id));
      },
    }),
  });

  defineRoute(app, '/v1/invoices/:id/cancel', {
    POST: async (event) => {
      const caller = requireApiKey(event, ctx);
      await readNoParams(event);
      return invoiceView(await cancelInvoice(ctx, caller, routeParam(event, 'id')), ctx.baseUrl);
    },
  });

  defineRoute(app, '/v1/invoices/:id/simulate', {
    POST: async (event) => {
      const caller = requireApiKey(event, ctx);
      const { value } = await readJsonObject(event);
      const unknown = Object.keys(value).find((k) => k !== 'event' && k !== 'amount_sats');
      if (unknown) throw unknownName('field', unknown);
      if (typeof value.event !== 'string' || !(SIMULATED_EVENTS as readonly string[]).includes(value.event)) {
        throw invalidField('event', `event must be one of ${SIMULATED_EVENTS.join(', ')}`);
      }
      if ('amount_sats' in value && value.event !== 'payment_detected') throw invalidField('amount_sats', 'amount_sats goes with event payment_detected only');
      const amountSats = 'amount_sats' in value ? parseAmountSats(value.amount_sats) : undefined;
      return invoiceView(await simulateInvoice(ctx, caller, routeParam(event, 'id'), value.event as SimulatedEvent, amountSats), ctx.baseUrl);
    },
  });
}

const LIST_PARAMS = new Set(['limit', 'starting_after', 'ending_before', 'status', 'created_gte', 'created_lte']);

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/**
 * A created_* filter in epoch ms, from ISO 8601 or Unix seconds. A time names
 * all of its last unit (created_at has milliseconds): created_lte=N includes
 * N.999, and an ISO day, minute, second or tenth of a second its whole span.
 */
function parseTime(param: 'created_gte' | 'created_lte', v: string): number {
  if (/^\d{1,12}$/.test(v)) return Number(v) * 1000 + (param === 'created_lte' ? 999 : 0);
  const m = ISO_TIME.exec(v);
  const ms = m ? Date.parse(v) : NaN;
  // Date.parse rolls 2026-02-30 over into March: a day the month lacks is an error, not a date.
  const daysInMonth = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]), 0)).getUTCDate() : 0;
  // Hour 24 (the end of a day) is refused: its span would reach into the next day.
  if (!m || !Number.isFinite(ms) || Number(m[3]) < 1 || Number(m[3]) > daysInMonth || m[4]?.startsWith('T24')) {
    throw invalidField(param, `${param} must be an ISO 8601 time or Unix seconds`);
  }
  return param === 'created_lte' ? ms + isoSpanMs(m) : ms;
}

/** Milliseconds an ISO time covers after its start: a day, a minute, a second, or what its fraction leaves. */
function isoSpanMs(m: RegExpExecArray): number {
  if (!m[4]) return 86_400_000 - 1;
  if (!m[5]) return 60_000 - 1;
  const digits = m[6] ? m[6].length - 1 : 0;
  return digits >= 3 ? 0 : 10 ** (3 - digits) - 1;
}

/** A cursor of another store, mode or till would place the page anywhere (or nowhere): it is refused by name instead. */
function assertCursorListed(invoices: InvoicesRepo, q: ListQuery): void {
  const [param, id] = q.startingAfter ? ['starting_after', q.startingAfter] : ['ending_before', q.endingBefore];
  if (id !== undefined && !invoices.isListed(id, q.storeId, q.livemode)) {
    throw invalidField(param, `${param} must be the id of an invoice that this key lists (its store, ${q.livemode ? 'live' : 'test'} mode)`);
  }
}

function parseListQuery(params: URLSearchParams) {
  for (const key of new Set(params.keys())) {
    if (!LIST_PARAMS.has(key)) throw unknownName('query parameter', key);
    if (params.getAll(key).length > 1) throw invalidField(key, `${key} is given more than once`);
  }
  const get = (k: string) => params.get(k) ?? undefined;
  const limitRaw = get('limit');
  let limit: number = LIST_LIMIT.default;
  if (limitRaw !== undefined) {
    if (!/^\d{1,4}$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > LIST_LIMIT.max) {
      throw invalidField('limit', `limit must be a whole number from 1 to ${LIST_LIMIT.max}`);
    }
    limit = Number(limitRaw);
  }
  const cursor = (k: string) => {
    const v = get(k);
    if (v !== undefined && !isId('inv', v)) throw invalidField(k, `${k} must be an invoice id`);
    return v;
  };
  const startingAfter = cursor('starting_after');
  const endingBefore = cursor('ending_before');
  if (startingAfter && endingBefore) throw invalidField('ending_before', 'give starting_after or ending_before, not both');
  const status = get('status');
  if (status !== undefined && !(INVOICE_STATUSES as readonly string[]).includes(status)) {
    throw invalidField('status', `status must be one of ${INVOICE_STATUSES.join(', ')}`);
  }
  const createdGte = get('created_gte') === undefined ? undefined : parseTime('created_gte', get('created_gte')!);
  const createdLte = get('created_lte') === undefined ? undefined : parseTime('created_lte', get('created_lte')!);
  return { limit, startingAfter, endingBefore, status: status as InvoiceStatus | undefined, createdGte, createdLte };
}

