import type { TestContext } from 'node:test';
import { startWebhookReceiver, type WebhookReceiver } from '../../fakes/webhook-receiver.ts';
import { call, setupStore, startTestTill, type TestStore, type TestTill, type TestTillOptions } from '../../helpers/till-server.ts';

export interface WebhookFixture {
  till: TestTill;
  store: TestStore;
  receiver: WebhookReceiver;
  endpointId: string;
  secret: string;
}

/**
 * A till (private targets allowed: the receiver is on loopback), a test store
 * and one endpoint at a scripted receiver. The db thread commits the
 * attempts' outcomes, as in `till serve`.
 */
export async function startWebhookFixture(t: TestContext, opts: TestTillOptions & { events?: string[] } = {}): Promise<WebhookFixture> {
  const till = await startTestTill(t, { dbThread: true, ...opts, env: { TILL_ALLOW_PRIVATE_CALLBACKS: 'true', ...opts.env } });
  const receiver = await startWebhookReceiver({ clock: till.clock });
  t.after(() => receiver.close());
  const store = setupStore(till);
  const res = await call(till, 'POST', `/v1/stores/${store.storeId}/webhooks`, {
    key: store.key,
    body: { url: `${receiver.url}/hooks`, enabled_events: opts.events ?? ['*'] },
  });
  if (res.status !== 201) throw new Error(`endpoint creation failed: ${res.text}`);
  return { till, store, receiver, endpointId: res.body.id, secret: res.body.secret };
}

/** More endpoints of the fixture's store on its receiver, one at each path, for invoice.created: receivers sharing a host. */
export async function addEndpointsOnReceiver(f: WebhookFixture, paths: string[]): Promise<void> {
  for (const path of paths) {
    const res = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: { url: `${f.receiver.url}${path}`, enabled_events: ['invoice.created'] } });
    if (res.status !== 201) throw new Error(`endpoint creation failed: ${res.text}`);
  }
}

export async function createInvoice(f: { till: TestTill; store: TestStore }, body: Record<string, unknown> = { amount_sats: 1000 }): Promise<any> {
  const res = await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body });
  if (res.status !== 201) throw new Error(`invoice creation failed: ${res.text}`);
  return res.body;
}

export function deliveriesOf(till: TestTill): Array<{ id: string; status: string; attempts: number; next_attempt_at: number | null; event_id: string; endpoint_id: string | null }> {
  return till.rt.ctx.db.prepare('SELECT id, status, attempts, next_attempt_at, event_id, endpoint_id FROM webhook_deliveries ORDER BY created_at, id').all() as any;
}
