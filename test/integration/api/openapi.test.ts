import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ERROR_STATUS } from '../../../src/domain/errors.ts';
import { createApp } from '../../../src/http/app.ts';
import { listRoutes } from '../../../src/http/internal/route.ts';
import { OPENAPI_DOCUMENT } from '../../../src/http/openapi.ts';
import { startTestTill } from '../../helpers/till-server.ts';

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
  assert.deepEqual(reserved.sort(), ['auth_account_suspended', 'auth_email_not_verified', 'auth_required', 'auth_totp_required', 'billing_overdue', 'gone'].sort());
});
