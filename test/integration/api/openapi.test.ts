import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ERROR_STATUS } from '../../../src/domain/errors.ts';
import { createApp } from '../../../src/http/app.ts';
import { listRoutes } from '../../../src/http/internal/route.ts';
import { OPENAPI_DOCUMENT } from '../../../src/http/openapi.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';
import { call, setupStore, startTestTill } from '../../helpers/till-server.ts';

const toOpenApiPath = (p: string) => p.replace(/:(\w+)/g, '{$1}');

test('the OpenAPI document lists exactly the routes and methods the app serves', async (t) => {
  const till = await startTestTill(t);
  const served = listRoutes(createApp(till.rt));
  const documented = OPENAPI_DOCUMENT.paths as Record<string, Record<string, unknown>>;
  const servedPaths = new Set(served.map((r) => toOpenApiPath(r.path)));
  assert.deepEqual([...servedPaths].sort(), Object.keys(documented).sort());
  for (const r of served) {
    const doc = documented[toOpenApiPath(r.path)]!;
    assert.deepEqual(r.methods.map((m) => m.toLowerCase()).sort(), Object.keys(doc).sort(), r.path);
  }
  const res = await fetch(`${till.url}/v1/openapi.json`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.openapi, '3.1.0');
  assert.deepEqual(Object.keys(body.paths).sort(), Object.keys(documented).sort());
});

test('every error code documented with its status; every code the code can raise is documented', () => {
  const documented = new Map<string, number>();
  const walk = (v: unknown): void => {
    if (!v || typeof v !== 'object') return;
    for (const [k, child] of Object.entries(v)) {
      if (/^\d{3}$/.test(k) && child && typeof child === 'object' && 'x-error-codes' in child) {
        for (const code of (child as { 'x-error-codes': string[] })['x-error-codes']) {
          const prior = documented.get(code);
          assert.ok(prior === undefined || prior === Number(k), `${code} documented under two statuses`);
          documented.set(code, Number(k));
        }
      }
      walk(child);
    }
  };
  walk(OPENAPI_DOCUMENT);
  for (const [code, status] of documented) assert.equal(ERROR_STATUS[code as keyof typeof ERROR_STATUS], status, code);
  // The codes the source raises: new ApiError('code', …) and invalidField (validation_error).
  const root = fileURLToPath(new URL('../../../src/', import.meta.url));
  const raised = new Set<string>(['validation_error']);
  const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
  for (const f of files(root)) for (const m of readFileSync(f, 'utf8').matchAll(/new ApiError\('(\w+)'/g)) raised.add(m[1]!);
  const missing = [...raised].filter((c) => !documented.has(c));
  assert.deepEqual(missing, [], 'codes raised in src/ but not in the OpenAPI document');
  // Codes of the spec that Till never raises (billing, sessions, 2FA) are reserved, not documented per route.
  const reserved = Object.keys(ERROR_STATUS).filter((c) => !documented.has(c));
  assert.deepEqual(reserved.sort(), ['auth_account_suspended', 'auth_email_not_verified', 'auth_totp_required', 'billing_overdue'].sort());
});

test('the documented request schemas hold the server\'s bounds: a body the document allows is not refused as malformed', async (t) => {
  const till = await startTestTill(t);
  const { key, storeId } = setupStore(till);
  const schemas = OPENAPI_DOCUMENT.components.schemas as Record<string, any>;
  const create = schemas.InvoiceCreate.properties;
  const post = (body: object) => call(till, 'POST', '/v1/invoices', { key, body });
  // Each bound, exactly at the edge (accepted) and past it (refused), by the document and by the server alike.
  const longest = 'k'.repeat(create.metadata.propertyNames.maxLength);
  assert.equal((await post({ amount_sats: 1000, metadata: { [longest]: 'v' } })).status, 201);
  assert.equal((await post({ amount_sats: 1000, metadata: { [`${longest}k`]: 'v' } })).status, 400);
  assert.equal((await post({ amount_sats: create.amount_sats.maximum + 1 })).status, 400);
  const pattern = new RegExp(create.amount.oneOf[0].pattern);
  for (const amount of ['12.50', '0.01', '999']) {
    assert.ok(pattern.test(amount), amount);
    assert.equal((await post({ amount, currency: 'USD' })).status, 201, amount);
  }
  for (const amount of ['012.50', '00.50', '1.234', '12345678901']) {
    assert.ok(!pattern.test(amount), amount);
    assert.equal((await post({ amount, currency: 'USD' })).status, 400, amount);
  }
  // The endpoint update documents the JSON body it requires.
  const update = (OPENAPI_DOCUMENT.paths as any)['/v1/stores/{id}/webhooks/{wid}'].post;
  assert.deepEqual(Object.keys(update.requestBody.content['application/json'].schema.properties).sort(), ['description', 'enabled', 'enabled_events', 'url']);
  const created = await call(till, 'POST', `/v1/stores/${storeId}/webhooks`, { key, body: { url: 'https://shop.example/hooks' } });
  assert.equal(created.status, 201, created.text);
  assert.equal((await call(till, 'POST', `/v1/stores/${storeId}/webhooks/${created.body.id}`, { key, body: { enabled: false } })).status, 200);
});

test('a request that never reaches a route is answered with a code the document lists for every route', async (t) => {
  const till = await startTestTill(t);
  const common = OPENAPI_DOCUMENT['x-common-errors'] as Record<string, { 'x-error-codes': string[] }>;
  // Content-Length beside chunked: Node's parser refuses it, whatever the path; /healthz documents no 400 of its own.
  const sent = 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n';
  const got = await rawConversation(till.url, sent);
  const code = JSON.parse(got.slice(got.indexOf('{'))).error.code;
  assert.deepEqual([statusCodes(got), code], [[400], 'validation_error']);
  assert.ok(common['400']?.['x-error-codes'].includes(code), `x-common-errors: ${JSON.stringify(common)}`);
});
