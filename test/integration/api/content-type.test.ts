import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call, setupStore, startTestTill, TRANSPORTS } from '../../helpers/till-server.ts';

// A client that checks headers strictly sees one spelling on every JSON answer:
// routes that return objects and routes that send serialized text alike.
const JSON_TYPE = 'application/json; charset=utf-8';

for (const transport of TRANSPORTS) {
  describe(`every JSON answer says Content-Type ${JSON_TYPE} (${transport})`, () => {
    test('invoices, webhook endpoints, secrets, health, the API description and the checkout snapshot', async (t) => {
      const till = await startTestTill(t, { transport });
      till.rt.ctx.config.allowPrivateCallbacks = true;
      const { key, storeId } = setupStore(till);
      const seen: string[] = [];
      const check = async (method: string, path: string, body?: unknown) => {
        const res = await call(till, method, path, { key, body });
        assert.ok(res.status < 400 || path === '/v1/nowhere', `${method} ${path} ${res.status} ${res.text}`);
        seen.push(`${method} ${path} ${res.status} ${res.headers.get('content-type')}`);
        return res.body;
      };
      const inv = await check('POST', '/v1/invoices', { amount_sats: 1000 });
      await check('GET', `/v1/invoices/${inv.id}`);
      await check('GET', '/v1/invoices');
      await check('POST', `/v1/invoices/${inv.id}/simulate`, { event: 'payment_detected' });
      const other = await check('POST', '/v1/invoices', { amount_sats: 1000 });
      await check('POST', `/v1/invoices/${other.id}/cancel`);
      const hooks = `/v1/stores/${storeId}/webhooks`;
      const ep = await check('POST', hooks, { url: 'http://127.0.0.1:9/hooks' });
      await check('GET', hooks);
      await check('GET', `${hooks}/${ep.id}`);
      await check('POST', `${hooks}/${ep.id}`, { description: 'shop' });
      await check('POST', `${hooks}/${ep.id}/rotate-secret`);
      await check('POST', `${hooks}/${ep.id}/test`);
      await check('DELETE', `${hooks}/${ep.id}`);
      await check('POST', `/v1/stores/${storeId}/callback-secret/rotate`);
      await check('GET', '/healthz');
      await check('GET', '/v1/openapi.json');
      await check('GET', `/pay/invoices/${inv.id}`);
      await check('GET', '/v1/nowhere');
      assert.deepEqual(seen.filter((line) => !line.endsWith(JSON_TYPE)), []);
    });
  });
}
