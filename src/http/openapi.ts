import { ERROR_STATUS, type ErrorCode } from '../domain/errors.ts';
import { EVENT_TYPES } from '../domain/event-types.ts';
import { INVOICE_STATUSES, PAYMENT_STATUSES } from '../domain/invoice.ts';
import { EXPIRES_IN_MINUTES, METADATA_LIMITS } from '../domain/invoice-request.ts';
import { RECEIVER_URL_MAX_LENGTH } from '../domain/receiver-url.ts';
import { MAX_SATS, USD_AMOUNT } from '../domain/money.ts';
import { DESCRIPTION_MAX } from '../services/webhooks.ts';
import { SIMULATED_EVENTS } from '../domain/simulate.ts';
import { VERSION } from '../version.ts';

// The machine-readable description of Till's HTTP API (OpenAPI 3.1), served at
// GET /v1/openapi.json. A test holds it to the app's real route table and to
// the error codes the code can produce, so it cannot drift.

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const nullable = (type: string, extra: object = {}) => ({ type: [type, 'null'], ...extra });
/** An object answer: every property listed is always there (null where it has no value), unless named in `optional`. */
const answer = (properties: Record<string, object>, optional: string[] = []) => ({
  type: 'object',
  required: Object.keys(properties).filter((k) => !optional.includes(k)),
  properties,
});

/** The error responses of an operation, grouped by status, each listing its codes. */
function errors(...codes: ErrorCode[]): Record<string, object> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(ERROR_STATUS[c], [...(byStatus.get(ERROR_STATUS[c]) ?? []), c]);
  return Object.fromEntries(
    [...byStatus].map(([status, cs]) => [String(status), { description: cs.join(', '), ...json(ref('Error')), 'x-error-codes': cs }]),
  );
}

const AUTH: ErrorCode[] = ['api_key_invalid', 'api_key_revoked', 'api_key_wrong_env', 'not_found'];
const BODY: ErrorCode[] = ['validation_error', 'unsupported_media_type', 'payload_too_large'];
/** A route without a body or query parameters refuses a query parameter. */
const NO_QUERY: ErrorCode[] = ['validation_error'];
/** A write refused below the disk floor, or after the database failed. */
const WRITE_503: ErrorCode[] = ['disk_full', 'database_unavailable'];
/** After a write failed to be made durable, every route but /healthz answers this until a restart (docs/API.md). */
const FAILED_503: ErrorCode = 'database_unavailable';
/** Actions without parameters: no body, an empty one or `{}`; a field is refused by name. */
const NO_PARAMS = { required: false, ...json({ type: 'object', additionalProperties: false, maxProperties: 0 }) };
/** The page's files carry an ETag and are revalidated on every use (docs/CHECKOUT.md). */
const NOT_MODIFIED = { description: 'not modified: If-None-Match names the current ETag; no body' };
const idParam = (name: string, description: string) => ({ name, in: 'path', required: true, schema: { type: 'string' }, description });

const invoiceProperties = {
  id: { type: 'string', pattern: '^inv_' },
  object: { const: 'invoice' },
  livemode: { type: 'boolean' },
  store_id: { type: 'string' },
  status: { type: 'string', enum: INVOICE_STATUSES },
  amount_sats: { type: 'integer' },
  amount: nullable('string', { description: 'USD with two decimals, when priced in fiat' }),
  currency: nullable('string', { enum: ['USD', null] }),
  rate: { oneOf: [{ type: 'null' }, answer({ usd_per_btc: { type: 'string' }, source: { type: 'string' }, fetched_at: { type: 'string', format: 'date-time' } })] },
  address: { type: 'string' },
  payment_uri: { type: 'string', description: 'BIP21' },
  amount_received_sats: { type: 'integer' },
  amount_confirmed_sats: { type: 'integer' },
  confirmations_required: { type: 'integer' },
  payments: { type: 'array', items: ref('Payment') },
  expires_at: { type: 'string', format: 'date-time' },
  created_at: { type: 'string', format: 'date-time' },
  paid_at: nullable('string', { format: 'date-time' }),
  cancelled_at: nullable('string', { format: 'date-time' }),
  expired_at: nullable('string', { format: 'date-time' }),
  metadata: { type: 'object', additionalProperties: { type: 'string' } },
  callback_url: nullable('string'),
  checkout_url: { type: 'string' },
};

const schemas = {
  Error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'request_id'],
        properties: {
          code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
          message: { type: 'string', description: 'human-readable; for validation errors it names the field' },
          request_id: { type: 'string', format: 'uuid', description: 'equal to the X-Request-Id header' },
          param: { type: 'string', description: 'the field or parameter at fault (validation errors)' },
          retry_after_seconds: { type: 'integer', description: '429 and stream_limit_reached; also sent as Retry-After (other 503s send Retry-After: 1 only)' },
        },
      },
    },
  },
  Payment: answer({
    txid: { type: 'string' },
    vout: { type: 'integer' },
    amount_sats: { type: 'integer' },
    confirmations: { type: 'integer' },
    block_height: nullable('integer'),
    status: { type: 'string', enum: PAYMENT_STATUSES, description: 'confirmed: in a block' },
    coinbase: { type: 'boolean', description: 'a coinbase output: confirmed only at 100 confirmations (and confirmations_required), unless 0 are required' },
    first_seen_at: { type: 'string', format: 'date-time' },
  }),
  Invoice: answer(invoiceProperties),
  InvoiceCreate: {
    type: 'object',
    additionalProperties: false,
    description: 'Exactly one of amount_sats, or amount with currency.',
    properties: {
      amount_sats: { type: 'integer', minimum: 1, maximum: MAX_SATS },
      amount: { oneOf: [{ type: 'string', pattern: USD_AMOUNT.source }, { type: 'number' }] },
      currency: { type: 'string', enum: ['USD'], description: 'USD (Till also takes its letters in any case)' },
      expires_in_minutes: { type: 'integer', minimum: EXPIRES_IN_MINUTES.min, maximum: EXPIRES_IN_MINUTES.max },
      callback_url: { type: 'string', format: 'uri', maxLength: RECEIVER_URL_MAX_LENGTH },
      metadata: {
        type: 'object',
        maxProperties: METADATA_LIMITS.maxKeys,
        propertyNames: { minLength: 1, maxLength: METADATA_LIMITS.maxKeyLength },
        additionalProperties: { type: 'string', maxLength: METADATA_LIMITS.maxValueLength },
      },
    },
  },
  InvoiceList: answer({ object: { const: 'list' }, url: { type: 'string' }, has_more: { type: 'boolean' }, data: { type: 'array', items: ref('Invoice') } }),
  CheckoutInvoice: {
    description: 'The public invoice without metadata and callback_url (merchant data stays private), plus the store branding, the server time for the countdown, and whether it is final.',
    ...answer({
      ...Object.fromEntries(Object.entries(invoiceProperties).filter(([k]) => k !== 'metadata' && k !== 'callback_url')),
      store: answer({ id: { type: 'string' }, name: { type: 'string' }, logo_url: nullable('string'), brand_color: nullable('string') }),
      server_time: { type: 'string', format: 'date-time' },
      final: { type: 'boolean', description: 'Nothing the buyer waits for can change any more: paid, late_paid, cancelled, or expired past its late window. Streams end after it.' },
    }),
  },
  WebhookEndpoint: answer({
    id: { type: 'string', pattern: '^we_' },
    object: { const: 'webhook_endpoint' },
    store_id: { type: 'string' },
    url: { type: 'string' },
    description: nullable('string'),
    enabled_events: { type: 'array', items: { type: 'string', enum: ['*', ...EVENT_TYPES] } },
    status: { type: 'string', enum: ['enabled', 'disabled'], description: 'as it was before a delete' },
    previous_secret_expires_at: nullable('string', { format: 'date-time' }),
    created_at: { type: 'string', format: 'date-time' },
    secret: { type: 'string', description: 'only in the answers of create and rotate-secret' },
    deleted: { const: true, description: 'only in the answer of delete' },
  }, ['secret', 'deleted']),
  WebhookEndpointList: answer({ object: { const: 'list' }, url: { type: 'string' }, has_more: { const: false, description: 'every endpoint (at most 16 a store), oldest first' }, data: { type: 'array', items: ref('WebhookEndpoint') } }),
  WebhookDelivery: answer({
    id: { type: 'string', pattern: '^dlv_' },
    object: { const: 'webhook_delivery' },
    event_id: { type: 'string' },
    store_id: { type: 'string' },
    endpoint_id: nullable('string'),
    url: { type: 'string' },
    status: { type: 'string', enum: ['attempting', 'success', 'failed', 'dead_letter'] },
    attempts: { type: 'integer', description: 'attempts in the current cycle (a replay starts a new one)' },
    total_attempts: { type: 'integer' },
    next_attempt_at: nullable('string', { format: 'date-time' }),
    last_attempt_at: nullable('string', { format: 'date-time' }),
    last_status_code: nullable('integer', { description: 'the last attempt\'s; null on a dead letter set aside (last_error endpoint disabled or deleted): see attempt_log' }),
    last_error: nullable('string'),
    response_body: nullable('string', { description: 'first 4 KiB of the last attempt\'s answer; null on a dead letter set aside, as last_status_code' }),
    created_at: { type: 'string', format: 'date-time' },
    completed_at: nullable('string', { format: 'date-time' }),
    attempt_log: {
      type: 'array',
      items: answer({
        n: { type: 'integer' },
        started_at: { type: 'string', format: 'date-time' },
        duration_ms: { type: 'integer' },
        status_code: nullable('integer'),
        error: nullable('string'),
        response_body: nullable('string'),
      }),
    },
  }),
  CallbackSecret: answer({ object: { const: 'callback_secret' }, secret: { type: 'string' }, previous_secret_expires_at: nullable('string', { format: 'date-time' }) }),
};

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const headers = {
  'X-Request-Id': { required: true, description: 'a fresh UUID per request; equal to error.request_id', schema: { type: 'string', format: 'uuid' } },
  'Retry-After': { required: true, description: 'seconds to wait before retrying', schema: { type: 'string', pattern: '^[0-9]+$' } },
  'Idempotent-Replayed': { description: 'true on an answer replayed for a repeated Idempotency-Key', schema: { const: 'true' } },
};

/** Every answer carries X-Request-Id; a 429 or 503 also Retry-After; a creation's 201 may be a replay. */
function withHeaders<T extends Record<string, Record<string, { responses: Record<string, object> }>>>(paths: T): T {
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        (response as { headers?: object }).headers = {
          'X-Request-Id': headerRef('X-Request-Id'),
          ...(status === '429' || status === '503' ? { 'Retry-After': headerRef('Retry-After') } : {}),
          ...(path === '/v1/invoices' && method === 'post' && status === '201' ? { 'Idempotent-Replayed': headerRef('Idempotent-Replayed') } : {}),
        };
      }
    }
  }
  return paths;
}

const invoiceId = idParam('id', 'invoice id (inv_…)');
const plainParam = {
  name: 'plain',
  in: 'query',
  schema: { type: 'string' },
  description: 'present (any value): the page rendered by the server for a browser without JavaScript, reloaded by a meta refresh (docs/CHECKOUT.md); the static page sends such a browser here',
} as const;
const storeId = idParam('id', "the API key's own store (sto_…)");
const endpointId = idParam('wid', 'webhook endpoint id (we_…)');
const endpointFields = {
  url: { type: 'string', format: 'uri', maxLength: RECEIVER_URL_MAX_LENGTH },
  description: { type: 'string', maxLength: DESCRIPTION_MAX },
  enabled_events: { type: 'array', minItems: 1, items: { type: 'string', enum: ['*', ...EVENT_TYPES] } },
};
const bearer = [{ apiKey: [] }];

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'Till',
    version: VERSION,
    description: 'Self-hosted Bitcoin invoicing: server-to-server API (/v1), public checkout API (/pay), hosted checkout page.',
  },
  servers: [{ url: '/' }],
  components: {
    securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'svc_live_… or svc_test_…' } },
    schemas,
    headers,
  },
  paths: withHeaders({
    '/healthz': {
      get: { summary: 'Health of the database, chain watcher and rate source', responses: { '200': { description: 'ok: invoices of every kind can be made and followed' }, '503': { description: 'degraded: database, disk or chain (see docs/API.md, Health)' } } },
    },
    '/v1/openapi.json': { get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' }, ...errors(FAILED_503) } } },
    '/v1/invoices': {
      post: {
        summary: 'Create an invoice',
        security: bearer,
        parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string', minLength: 1, maxLength: 255 } }],
        requestBody: { required: true, ...json(ref('InvoiceCreate')) },
        responses: {
          '201': { description: 'created (a replay of the same Idempotency-Key returns the first answer, with Idempotent-Replayed: true)', ...json(ref('Invoice')) },
          ...errors(...AUTH, ...BODY, 'invalid_currency', 'invalid_amount', 'no_active_xpub', 'gap_limit_exceeded', 'idempotency_conflict', 'rate_limited', 'chain_syncing', 'disk_full', 'database_unavailable', 'rates_unavailable'),
        },
      },
      get: {
        summary: 'List invoices, newest first',
        security: bearer,
        parameters: [
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
          { name: 'starting_after', in: 'query', schema: { type: 'string' }, description: 'id of an invoice this key lists: the page of those older than it' },
          { name: 'ending_before', in: 'query', schema: { type: 'string' }, description: 'id of an invoice this key lists: the page of those newer than it' },
          { name: 'status', in: 'query', schema: { type: 'string', enum: INVOICE_STATUSES } },
          { name: 'created_gte', in: 'query', schema: { type: 'string' }, description: 'ISO 8601 or Unix seconds' },
          { name: 'created_lte', in: 'query', schema: { type: 'string' }, description: 'ISO 8601 or Unix seconds; includes all of the second, minute or day it names' },
        ],
        responses: { '200': { description: 'a page', ...json(ref('InvoiceList')) }, ...errors(...AUTH, 'validation_error', FAILED_503) },
      },
    },
    '/v1/invoices/{id}': {
      get: { summary: 'Fetch an invoice', security: bearer, parameters: [invoiceId], responses: { '200': { description: 'the invoice', ...json(ref('Invoice')) }, ...errors(...AUTH, ...NO_QUERY, FAILED_503) } },
    },
    '/v1/invoices/{id}/cancel': {
      post: {
        summary: 'Cancel a pending invoice',
        security: bearer,
        parameters: [invoiceId],
        requestBody: NO_PARAMS,
        responses: { '200': { description: 'cancelled', ...json(ref('Invoice')) }, ...errors(...AUTH, ...BODY, 'invoice_not_cancellable', ...WRITE_503) },
      },
    },
    '/v1/invoices/{id}/simulate': {
      post: {
        summary: 'Test mode: fire a lifecycle event through the state machine',
        security: bearer,
        parameters: [invoiceId],
        requestBody: {
          required: true,
          ...json({
            type: 'object',
            required: ['event'],
            additionalProperties: false,
            properties: {
              event: { type: 'string', enum: SIMULATED_EVENTS },
              amount_sats: { type: 'integer', minimum: 1, description: 'payment_detected only: what the payment pays (default: what is missing)' },
            },
          }),
        },
        responses: {
          '200': { description: 'the invoice after the event', ...json(ref('Invoice')) },
          ...errors(...AUTH, ...BODY, 'invalid_amount', 'test_mode_only', 'invoice_already_paid', 'invoice_not_paid', 'invoice_not_cancellable', 'invoice_expired', ...WRITE_503),
        },
      },
    },
    '/v1/stores/{id}/webhooks': {
      get: { summary: "List the store's webhook endpoints", security: bearer, parameters: [storeId], responses: { '200': { description: 'endpoints', ...json(ref('WebhookEndpointList')) }, ...errors(...AUTH, ...NO_QUERY, FAILED_503) } },
      post: {
        summary: 'Add a webhook endpoint; the secret is returned once',
        security: bearer,
        parameters: [storeId],
        requestBody: { required: true, ...json({ type: 'object', additionalProperties: false, required: ['url'], properties: endpointFields }) },
        responses: { '201': { description: 'created', ...json(ref('WebhookEndpoint')) }, ...errors(...AUTH, ...BODY, ...WRITE_503) },
      },
    },
    '/v1/stores/{id}/webhooks/{wid}': {
      get: { summary: 'Fetch an endpoint', security: bearer, parameters: [storeId, endpointId], responses: { '200': { description: 'the endpoint', ...json(ref('WebhookEndpoint')) }, ...errors(...AUTH, ...NO_QUERY, 'gone', FAILED_503) } },
      post: {
        summary: 'Update an endpoint (url, description, enabled_events, enabled); deliveries not yet successful follow a new url',
        security: bearer,
        parameters: [storeId, endpointId],
        requestBody: { required: true, ...json({ type: 'object', additionalProperties: false, properties: { ...endpointFields, enabled: { type: 'boolean' } } }) },
        responses: { '200': { description: 'updated', ...json(ref('WebhookEndpoint')) }, ...errors(...AUTH, ...BODY, 'gone', ...WRITE_503) },
      },
      delete: { summary: 'Delete an endpoint', security: bearer, parameters: [storeId, endpointId], requestBody: NO_PARAMS, responses: { '200': { description: 'the endpoint as it was, with deleted: true', ...json(ref('WebhookEndpoint')) }, ...errors(...AUTH, ...BODY, 'gone', ...WRITE_503) } },
    },
    '/v1/stores/{id}/webhooks/{wid}/rotate-secret': {
      post: { summary: 'New signing secret; the previous one stays valid 24 h', security: bearer, parameters: [storeId, endpointId], requestBody: NO_PARAMS, responses: { '200': { description: 'with the new secret', ...json(ref('WebhookEndpoint')) }, ...errors(...AUTH, ...BODY, 'gone', ...WRITE_503) } },
    },
    '/v1/stores/{id}/webhooks/{wid}/test': {
      post: { summary: 'Send a synthetic webhook.test now; answered after the first attempt', security: bearer, parameters: [storeId, endpointId], requestBody: NO_PARAMS, responses: { '201': { description: 'the delivery', ...json(ref('WebhookDelivery')) }, ...errors(...AUTH, ...BODY, 'gone', ...WRITE_503) } },
    },
    '/v1/stores/{id}/callback-secret/rotate': {
      post: { summary: "Rotate the secret that signs deliveries to invoices' callback_url", security: bearer, parameters: [storeId], requestBody: NO_PARAMS, responses: { '200': { description: 'with the new secret', ...json(ref('CallbackSecret')) }, ...errors(...AUTH, ...BODY, ...WRITE_503) } },
    },
    '/v1/stores/{id}/test-invoice': {
      post: { summary: 'Dashboard endpoint (session cookie, spec 5): Till has no dashboard, so this is always 401 auth_required; create test invoices at POST /v1/invoices with a test key', parameters: [idParam('id', 'store id (sto_…)')], responses: errors('auth_required', FAILED_503) },
    },
    '/pay/invoices/{id}': {
      get: { summary: 'Public checkout snapshot (CORS *)', parameters: [invoiceId], responses: { '200': { description: 'invoice and branding', ...json(ref('CheckoutInvoice')) }, ...errors('not_found', 'database_unavailable') } },
    },
    '/pay/invoices/{id}/events': {
      get: {
        summary: 'Server-Sent Events: `event: invoice` with the snapshot on connect and on every change (`event: resumed` instead on a reconnect whose Last-Event-ID is current)',
        parameters: [invoiceId, { name: 'Last-Event-ID', in: 'header', schema: { type: 'string' }, description: 'the invoice version last received' }],
        responses: { '200': { description: 'text/event-stream' }, '204': { description: 'the invoice is final and the client already has that state: stop reconnecting' }, ...errors('not_found', 'validation_error', 'stream_limit_reached', 'database_unavailable') },
      },
    },
    '/pay/invoices/{id}/stream': {
      get: { summary: 'WebSocket: {"type":"invoice","data":…} on connect and on every change', parameters: [invoiceId], responses: { '101': { description: 'upgraded' }, ...errors('not_found', 'upgrade_required', 'stream_limit_reached', FAILED_503) } },
    },
    '/checkout/{id}': {
      get: {
        summary: 'Hosted checkout page',
        parameters: [invoiceId, plainParam],
        responses: {
          '200': { description: 'HTML' },
          '304': NOT_MODIFIED,
          '308': { description: '/checkout/{id}/ redirects to ../{id} (the page\'s files are relative to it)' },
          '404': { description: 'unknown invoice: the same page (HTML), which says so' },
          ...errors(FAILED_503),
        },
      },
    },
    '/checkout/': {
      get: {
        summary: 'A checkout link cut short before its id: the page (HTML), which says the invoice is not found; /checkout redirects here',
        parameters: [plainParam],
        responses: { '308': { description: '/checkout redirects to checkout/ (the page\'s files are relative to it)' }, '404': { description: 'the page (HTML)' }, ...errors(FAILED_503) },
      },
    },
    '/stores/{id}/xpubs': { get: { summary: 'How to add a store\'s xpub with the CLI (text/plain): the page 409 no_active_xpub links to when no dashboard_url is set', parameters: [idParam('id', 'store id (sto_…)')], responses: { '200': { description: 'text/plain' }, ...errors('not_found', FAILED_503) } } },
    '/checkout/{id}/qr.svg': { get: { summary: 'QR code of the BIP21 payment URI', parameters: [invoiceId], responses: { '200': { description: 'SVG' }, '304': NOT_MODIFIED, ...errors('not_found', FAILED_503) } } },
    '/checkout/{id}/qr.png': { get: { summary: 'The same QR code as a PNG (the page without JavaScript: Tor Browser at its Safest level shows no SVG)', parameters: [invoiceId], responses: { '200': { description: 'PNG' }, '304': NOT_MODIFIED, ...errors('not_found', FAILED_503) } } },
    '/checkout/assets/{name}': { get: { summary: 'Checkout page assets', parameters: [idParam('name', 'asset file name')], responses: { '200': { description: 'asset' }, '304': NOT_MODIFIED, ...errors('not_found', FAILED_503) } } },
  }),
  // Any route: a request Node's parser refuses (framing, headers over 16 KiB, chunk extensions too large), one
  // without Host, or one not received in time never reaches a route (docs/DECISIONS.md, "Malformed requests").
  'x-common-errors': errors('validation_error', 'not_found', 'method_not_allowed', 'payload_too_large', 'internal_error'),
} as const;
