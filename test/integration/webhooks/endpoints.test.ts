import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { address } from 'bitcoinjs-lib';
import { answer } from '../../fakes/webhook-receiver.ts';
import { databasePath } from '../../../src/db/connection.ts';
import { runTillBeside } from '../../helpers/cli.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';
import { call, setupStore, TRANSPORTS } from '../../helpers/till-server.ts';
import { createInvoice, deliveriesOf, startWebhookFixture } from './helpers.ts';
import { holdWriteLock } from '../../helpers/write-lock.ts';

for (const transport of TRANSPORTS) {
  describe(`webhook endpoints API (${transport})`, () => {
    test('create returns the secret once; list never shows it', async (t) => {
      const f = await startWebhookFixture(t, { transport });
      assert.match(f.secret, /^whsec_[0-9A-Za-z]{43}$/);
      const list = await call(f.till, 'GET', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key });
      assert.equal(list.status, 200);
      assert.equal(list.body.object, 'list');
      assert.equal(list.body.data.length, 1);
      assert.equal(list.body.data[0].id, f.endpointId);
      assert.equal(list.body.data[0].status, 'enabled');
      assert.ok(!list.text.includes(f.secret));
      const raw = f.till.rt.ctx.db.prepare('SELECT secret FROM webhook_endpoints').get() as { secret: string };
      assert.ok(!raw.secret.includes(f.secret.slice(6)), 'the secret is sealed at rest');
    });

    test('the test call sends a signed webhook.test and answers with the delivery record', async (t) => {
      const f = await startWebhookFixture(t, { transport });
      f.receiver.respondWith(answer.status(202, 'got it'));
      const res = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}/test`, { key: f.store.key });
      assert.equal(res.status, 201);
      assert.equal(res.body.object, 'webhook_delivery');
      assert.equal(res.body.status, 'success');
      assert.equal(res.body.last_status_code, 202);
      assert.equal(res.body.response_body, 'got it');
      assert.equal(res.body.attempt_log.length, 1);
      const body = JSON.parse(f.receiver.requests[0]!.body);
      assert.equal(body.event_type, 'webhook.test');
      assert.equal(body.data.invoice.metadata.synthetic, 'true');
      // Nothing to fulfil, on this till's network (regtest here).
      assert.equal(body.data.invoice.status, 'pending');
      assert.match(body.data.invoice.address, /^bcrt1q/);
      // Of a type no invoice gets (P2WSH: a 32-byte version-0 program), so it is never a real invoice's address too.
      const { version, data } = address.fromBech32(body.data.invoice.address);
      assert.deepEqual([version, data.length], [0, 32]);
      // A synthetic event goes to the tested endpoint only and creates no invoice.
      assert.equal((f.till.rt.ctx.db.prepare('SELECT COUNT(*) n FROM invoices').get() as { n: number }).n, 0);
    });

    test('disable stops deliveries; a disabled endpoint gets nothing', async (t) => {
      const f = await startWebhookFixture(t, { transport });
      const off = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { enabled: false } });
      assert.equal(off.status, 200);
      assert.equal(off.body.status, 'disabled');
      await createInvoice(f);
      await f.till.rt.webhooks.runOnce();
      assert.equal(f.receiver.requests.length, 0);
      assert.equal(deliveriesOf(f.till).length, 0);
      const test = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}/test`, { key: f.store.key });
      assert.equal(test.status, 400, test.text);
      assert.match(test.body.error.message, /is disabled; enable it to test it/);
      assert.equal(deliveriesOf(f.till).length, 0, 'no test delivery was queued');
      const del = await call(f.till, 'DELETE', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key });
      assert.equal(del.status, 200);
      assert.equal((await call(f.till, 'GET', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key })).body.data.length, 0);
      // Deleted on purpose: 410 gone (spec 7.2), for its own store only; another store still gets 404.
      const path = `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`;
      for (const [method, sub, body] of [['GET', '', undefined], ['POST', '', { enabled: true }], ['DELETE', '', undefined], ['POST', '/rotate-secret', undefined], ['POST', '/test', undefined]] as const) {
        const res = await call(f.till, method, path + sub, { key: f.store.key, body });
        assert.equal(res.status, 410, `${method} ${sub}: ${res.text}`);
        assert.equal(res.body.error.code, 'gone');
      }
      const other = setupStore(f.till);
      assert.equal((await call(f.till, 'GET', `/v1/stores/${other.storeId}/webhooks/${f.endpointId}`, { key: other.key })).body.error.code, 'not_found');
    });

    test('another store, bad input and auth get the documented errors', async (t) => {
      const f = await startWebhookFixture(t, { transport });
      const other = setupStore(f.till);
      const cases: Array<[string, string, { key?: string; body?: unknown }, number, string]> = [
        ['GET', `/v1/stores/${other.storeId}/webhooks`, { key: f.store.key }, 404, 'not_found'],
        ['POST', `/v1/stores/${other.storeId}/webhooks/${f.endpointId}/test`, { key: other.key }, 404, 'not_found'],
        ['GET', `/v1/stores/${f.store.storeId}/webhooks`, {}, 401, 'api_key_invalid'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: { url: 'ftp://x' } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: { url: 'https://user:pass@x.example/hook' } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { url: 'https://user:pass@x.example/hook' } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: {} }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: { url: 'https://x.example', enabled_events: ['invoice.nope'] } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: { url: 'https://x.example', enabled_events: [] } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: { url: 'https://x.example', enabled_events: ['*', 'invoice.paid'] } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: { url: 'https://x.example', secret: 'mine' } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks/we_nope/test`, { key: f.store.key }, 404, 'not_found'],
        // The actions take no parameters: one sent is refused by name, not ignored.
        ['POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}/rotate-secret`, { key: f.store.key, body: { secret: 'whsec_mine' } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}/test`, { key: f.store.key, body: { event_type: 'invoice.paid' } }, 400, 'validation_error'],
        ['POST', `/v1/stores/${f.store.storeId}/callback-secret/rotate`, { key: f.store.key, body: { keep_previous: false } }, 400, 'validation_error'],
        ['DELETE', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { force: true } }, 400, 'validation_error'],
        ['PUT', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key }, 405, 'method_not_allowed'],
      ];
      for (const [method, path, opts, status, code] of cases) {
        const res = await call(f.till, method, path, opts);
        assert.equal(res.status, status, `${method} ${path} ${JSON.stringify(opts.body)}: ${res.text}`);
        assert.equal(res.body.error.code, code);
        assert.equal(res.body.error.request_id, res.headers.get('x-request-id'));
      }
      assert.equal((f.till.rt.ctx.db.prepare('SELECT COUNT(*) n FROM webhook_endpoints WHERE deleted_at IS NULL').get() as { n: number }).n, 1, 'nothing was created or deleted by a bad request');
    });

    test("while another process holds the write lock, endpoint changes wait for it without stopping the event loop", async (t) => {
      const f = await startWebhookFixture(t, { transport });
      const lock = holdWriteLock(t, databasePath(f.till.config.dataDir));
      const base = `/v1/stores/${f.store.storeId}`;
      const answers = Promise.all([
        call(f.till, 'POST', `${base}/webhooks`, { key: f.store.key, body: { url: `${f.receiver.url}/second` } }),
        call(f.till, 'POST', `${base}/webhooks/${f.endpointId}`, { key: f.store.key, body: { description: 'renamed' } }),
        call(f.till, 'POST', `${base}/webhooks/${f.endpointId}/rotate-secret`, { key: f.store.key }),
        call(f.till, 'POST', `${base}/callback-secret/rotate`, { key: f.store.key }),
      ]);
      await lock.assertLoopTurnsFor(200);
      assert.equal(f.till.rt.ctx.db.prepare('SELECT COUNT(*) FROM webhook_endpoints').pluck().get(), 1, 'nothing written yet');
      lock.release();
      const [created, renamed, rotated, callback] = await answers;
      assert.equal(created.status, 201, created.text);
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.description, 'renamed');
      assert.equal(rotated.status, 200, rotated.text);
      assert.notEqual(rotated.body.secret, f.secret);
      assert.equal(callback.status, 200, callback.text);
      assert.equal(f.till.rt.ctx.db.prepare('SELECT COUNT(*) FROM webhook_endpoints WHERE deleted_at IS NULL').pluck().get(), 2);
    });
  });
}

describe('webhook endpoints API on a raw socket', () => {
  test('a DELETE whose chunked body Node refuses is answered 400 and deletes nothing (it read no body before: the endpoint went, the client saw a 400)', async (t) => {
    const f = await startWebhookFixture(t);
    const path = `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`;
    const sent = `DELETE ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${f.store.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`;
    assert.deepEqual(statusCodes(await rawConversation(f.till.url, sent)), [400]);
    assert.equal((await call(f.till, 'GET', path, { key: f.store.key })).status, 200, 'the endpoint is still there');
  });
});

describe('webhooks and deliveries CLI', () => {
  test('add, list, rotate, disable, then list and show deliveries', async (t) => {
    const f = await startWebhookFixture(t);
    const add = await runTillBeside(f.till, ['--json', 'webhooks', 'add', '--store', f.store.storeId, '--url', `${f.receiver.url}/cli`, '--events', 'invoice.created,invoice.paid']);
    assert.equal(add.code, 0, add.stderr);
    const ep = JSON.parse(add.stdout);
    assert.deepEqual(ep.enabled_events, ['invoice.created', 'invoice.paid']);
    const list = await runTillBeside(f.till, ['webhooks', 'list', '--store', f.store.storeId]);
    assert.match(list.stdout, new RegExp(ep.id));
    assert.ok(!list.stdout.includes('whsec_'));
    const rot = await runTillBeside(f.till, ['--json', 'webhooks', 'rotate', '--store', f.store.storeId, '--endpoint', ep.id]);
    assert.equal(rot.code, 0, rot.stderr);
    assert.notEqual(JSON.parse(rot.stdout).secret, ep.secret);
    const bad = await runTillBeside(f.till, ['webhooks', 'rotate', '--store', f.store.storeId]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--endpoint <id> or --callback/);
    const dis = await runTillBeside(f.till, ['webhooks', 'disable', '--store', f.store.storeId, ep.id]);
    assert.equal(dis.code, 0, dis.stderr);
    await createInvoice(f);
    f.receiver.respondWith(answer.status(500, 'down'));
    await f.till.rt.webhooks.runOnce();
    const dl = await runTillBeside(f.till, ['--json', 'deliveries', 'list', '--status', 'attempting']);
    const rows = JSON.parse(dl.stdout);
    assert.equal(rows.length, 1, 'only the enabled first endpoint got a delivery');
    const show = await runTillBeside(f.till, ['deliveries', 'show', rows[0].id]);
    assert.match(show.stdout, /#1 .* 500 .*down/);
    const replayLive = await runTillBeside(f.till, ['deliveries', 'replay', rows[0].id]);
    assert.notEqual(replayLive.code, 0, 'a delivery still attempting cannot be replayed');
    assert.match(replayLive.stderr, /only dead_letter and failed/);
  });

  test("a receiver's answer is shown with its control characters escaped, never sent to the terminal", async (t) => {
    const f = await startWebhookFixture(t);
    f.receiver.respondWith(answer.status(500, 'ok \x1b]0;PWNED\x07\x1b[2J\x1b[31mFAKE\u202e'));
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const [delivery] = deliveriesOf(f.till);
    const show = await runTillBeside(f.till, ['deliveries', 'show', delivery!.id]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /500 .*ok \\u001b\]0;PWNED\\u0007\\u001b\[2J\\u001b\[31mFAKE\\u202e/);
    assert.doesNotMatch(show.stdout, /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]/);
    // --json keeps the bytes as they came, escaped by JSON.
    const json = await runTillBeside(f.till, ['--json', 'deliveries', 'show', delivery!.id]);
    assert.equal(JSON.parse(json.stdout).attempt_log[0].response_body, 'ok \x1b]0;PWNED\x07\x1b[2J\x1b[31mFAKE\u202e');
  });
});
