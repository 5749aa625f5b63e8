import type { H3, H3Event } from 'h3';
import { ApiError } from '../../domain/errors.ts';
import { deliveryView, endpointView } from '../../domain/webhook-views.ts';
import type { Runtime } from '../../runtime.ts';
import {
  createEndpoint,
  deleteEndpoint,
  getDelivery,
  getEndpoint,
  listEndpoints,
  queueTestDelivery,
  rotateCallbackSecret,
  rotateEndpointSecret,
  updateEndpoint,
} from '../../services/webhooks.ts';
import { runRequestedWrite } from '../../services/disk.ts';
import { requireApiKey } from '../middleware/auth.ts';
import { readJsonObject, readNoParams } from '../internal/body.ts';
import { assertNoQuery } from '../internal/query.ts';
import { defineRoute, routeParam } from '../internal/route.ts';

// Writes go through the write queue (each service's own transaction becomes a
// savepoint in its group commit): another process's write lock is then waited
// for without stopping the event loop, as for invoices.
export function registerWebhookRoutes(app: H3, rt: Runtime): void {
  const { ctx } = rt;

  /** The store in the path, which must be the API key's own (another store's id is not_found). */
  function ownStore(event: H3Event): string {
    const caller = requireApiKey(event, ctx);
    assertNoQuery(event.url.search);
    const id = routeParam(event, 'id');
    if (id !== caller.store.id) throw new ApiError('not_found', `no store ${id.slice(0, 64)}`);
    return id;
  }

  /** The endpoint in the path, of the API key's own store. Read before a write is queued: a refusal then costs no batch. */
  function ownEndpoint(event: H3Event): { storeId: string; wid: string } {
    return { storeId: ownStore(event), wid: routeParam(event, 'wid') };
  }

  defineRoute(app, '/v1/stores/:id/webhooks', {
    GET: (event) => {
      const storeId = ownStore(event);
      return { object: 'list', url: `/v1/stores/${storeId}/webhooks`, has_more: false, data: listEndpoints(ctx, storeId).map(endpointView) };
    },
    POST: async (event) => {
      const storeId = ownStore(event);
      const { value } = await readJsonObject(event);
      const { endpoint, secret } = await runRequestedWrite(ctx, () => createEndpoint(ctx, storeId, value));
      event.res.status = 201;
      return { ...endpointView(endpoint), secret };
    },
  });

  defineRoute(app, '/v1/stores/:id/webhooks/:wid', {
    GET: (event) => {
      const { storeId, wid } = ownEndpoint(event);
      return endpointView(getEndpoint(ctx, storeId, wid));
    },
    POST: async (event) => {
      const storeId = ownStore(event);
      const { value } = await readJsonObject(event);
      const wid = routeParam(event, 'wid');
      return endpointView(await runRequestedWrite(ctx, () => updateEndpoint(ctx, storeId, wid, value)));
    },
    DELETE: async (event) => {
      const { storeId, wid } = ownEndpoint(event);
      // Read before the write: a body Node refuses half-way (a bad chunk) must find nothing deleted.
      await readNoParams(event);
      return { ...endpointView(await runRequestedWrite(ctx, () => deleteEndpoint(ctx, storeId, wid))), deleted: true };
    },
  });

  defineRoute(app, '/v1/stores/:id/webhooks/:wid/rotate-secret', {
    POST: async (event) => {
      const { storeId, wid } = ownEndpoint(event);
      await readNoParams(event);
      const { endpoint, secret } = await runRequestedWrite(ctx, () => rotateEndpointSecret(ctx, storeId, wid));
      return { ...endpointView(endpoint), secret };
    },
  });

  defineRoute(app, '/v1/stores/:id/webhooks/:wid/test', {
    POST: async (event) => {
      const { storeId, wid } = ownEndpoint(event);
      await readNoParams(event);
      const id = await runRequestedWrite(ctx, () => queueTestDelivery(ctx, storeId, wid));
      // Answered after the first attempt, so the caller sees the receiver's response at once.
      await rt.webhooks.deliverNow(id);
      event.res.status = 201;
      return deliveryView(getDelivery(ctx, id), ctx.repos.webhookDeliveries.attempts(id));
    },
  });

  defineRoute(app, '/v1/stores/:id/callback-secret/rotate', {
    POST: async (event) => {
      const storeId = ownStore(event);
      await readNoParams(event);
      const { secret, previousExpiresAt } = await runRequestedWrite(ctx, () => rotateCallbackSecret(ctx, storeId));
      return { object: 'callback_secret', secret, previous_secret_expires_at: previousExpiresAt === null ? null : new Date(previousExpiresAt).toISOString() };
    },
  });
}
