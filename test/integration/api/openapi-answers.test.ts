import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { doc, headerProblemsOf, problemsOf } from '../../helpers/openapi-schema.ts';
import { call, setupStore, startTestTill, TRANSPORTS } from '../../helpers/till-server.ts';

// The document's answer schemas against real answers (the checker: test/helpers/openapi-schema.ts).

test('the checker finds a missing property, an undocumented one, a wrong type, and a header missing or wrong', () => {
  const payment = { txid: 'ab', vout: 0, amount_sats: 1, confirmations: 0, block_height: null, status: 'mempool', coinbase: false, first_seen_at: '2026-11-26T00:00:00.000Z' };
  const schema = doc.components.schemas.Payment;
  assert.deepEqual(problemsOf(schema, payment), []);
  const { vout: _, ...missing } = payment;
  assert.deepEqual(problemsOf(schema, missing), ['$.vout: missing']);
  assert.deepEqual(problemsOf(schema, { ...payment, extra: 1 }), ['$.extra: not in the document']);
  assert.deepEqual(problemsOf(schema, { ...payment, vout: '0' }), ['$.vout: "0" is not integer']);
  const documented = doc.paths['/v1/invoices'].post.responses['201'].headers;
  assert.deepEqual(headerProblemsOf(documented, new Headers({ 'x-request-id': crypto.randomUUID() })), []);
  assert.deepEqual(headerProblemsOf(documented, new Headers({ 'idempotent-replayed': 'yes' })), ['header X-Request-Id: missing', 'header Idempotent-Replayed: yes']);
});

for (const transport of TRANSPORTS) {
  describe(`answers as the OpenAPI document describes them (${transport})`, () => {
    test('invoices in each state, lists, webhook endpoints, deliveries, secrets, the checkout snapshot and errors', async (t) => {
      const till = await startTestTill(t, { transport });
      till.rt.ctx.config.allowPrivateCallbacks = true;
      const { key, storeId } = setupStore(till);
      const problems: string[] = [];
      const check = async (method: string, template: string, path: string, body?: unknown, headers?: Record<string, string>) => {
        const res = await call(till, method, path, { key, body, headers });
        const documented = doc.paths[template]?.[method.toLowerCase()]?.responses?.[String(res.status)];
        assert.ok(documented, `${method} ${template} answers ${res.status}, which the document does not list: ${res.text.slice(0, 200)}`);
        const schema = documented.content?.['application/json']?.schema;
        assert.ok(schema, `${method} ${template} ${res.status} has no schema in the document`);
        problems.push(...[...problemsOf(schema, res.body), ...headerProblemsOf(documented.headers ?? {}, res.headers)].map((p) => `${method} ${template} ${res.status} ${p}`));
        return res.body;
      };
      const inv = await check('POST', '/v1/invoices', '/v1/invoices', { amount_sats: 1000, metadata: { order: '1' }, callback_url: 'http://127.0.0.1:9/cb' });
      await check('POST', '/v1/invoices', '/v1/invoices', { amount: '12.50', currency: 'USD' });
      await check('POST', '/v1/invoices/{id}/simulate', `/v1/invoices/${inv.id}/simulate`, { event: 'payment_detected', amount_sats: 400 });
      await check('POST', '/v1/invoices/{id}/simulate', `/v1/invoices/${inv.id}/simulate`, { event: 'paid' });
      await check('GET', '/v1/invoices/{id}', `/v1/invoices/${inv.id}`);
      await check('GET', '/v1/invoices', '/v1/invoices?limit=2');
      const other = await check('POST', '/v1/invoices', '/v1/invoices', { amount_sats: 1000 });
      await check('POST', '/v1/invoices/{id}/cancel', `/v1/invoices/${other.id}/cancel`);
      await check('POST', '/v1/invoices/{id}/cancel', `/v1/invoices/${other.id}/cancel`);
      await check('POST', '/v1/invoices', '/v1/invoices', { amount_sats: 0 });
      for (let i = 0; i < 2; i++) await check('POST', '/v1/invoices', '/v1/invoices', { amount_sats: 7 }, { 'idempotency-key': 'order-7' });
      // Past 100 creations a minute: 429, with Retry-After.
      for (let made = 0; (await call(till, 'POST', '/v1/invoices', { key, body: { amount_sats: 1 } })).status === 201 && made < 100; made++);
      const limited = await check('POST', '/v1/invoices', '/v1/invoices', { amount_sats: 1 });
      assert.equal(limited.error.code, 'rate_limited');
      const hooks = `/v1/stores/${storeId}/webhooks`;
      const ep = await check('POST', '/v1/stores/{id}/webhooks', hooks, { url: 'http://127.0.0.1:9/hooks', description: 'shop' });
      await check('GET', '/v1/stores/{id}/webhooks', hooks);
      await check('GET', '/v1/stores/{id}/webhooks/{wid}', `${hooks}/${ep.id}`);
      await check('POST', '/v1/stores/{id}/webhooks/{wid}', `${hooks}/${ep.id}`, { enabled: true });
      await check('POST', '/v1/stores/{id}/webhooks/{wid}/rotate-secret', `${hooks}/${ep.id}/rotate-secret`);
      await check('POST', '/v1/stores/{id}/webhooks/{wid}/test', `${hooks}/${ep.id}/test`);
      await check('DELETE', '/v1/stores/{id}/webhooks/{wid}', `${hooks}/${ep.id}`);
      await check('GET', '/v1/stores/{id}/webhooks/{wid}', `${hooks}/${ep.id}`);
      await check('POST', '/v1/stores/{id}/callback-secret/rotate', `/v1/stores/${storeId}/callback-secret/rotate`);
      await check('GET', '/pay/invoices/{id}', `/pay/invoices/${inv.id}`);
      assert.deepEqual(problems, []);
    });
  });
}
