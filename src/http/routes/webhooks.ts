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
import { requireApiKey } from '../middleware/auth.ts';
import { readJsonObject } from '../internal/body.ts';
import { defineRoute, routeParam } from '../internal/route.ts';

export function registerWebhookRoutes(app: H3, rt: Runtime): void {
  const { ctx } = rt;

  /** The store in the path, which must be the API key's own (another store's id is not_found). */
  function ownStore(event: H3Event): string {
    const caller = requireApiKey(event, ctx);
    const id = routeParam(event, 'id');
    if (id !== caller.store.id) throw new ApiError('not_found', `no store ${id.slice(0, 64)}`);
    return id;
  }

  defineRoute(app, '/v1/stores/:id/webhooks', {
    GET: (event) => {
      const storeId = ownStore(event);
      return { object: 'list', has_more: false, data: listEndpoints(ctx, storeId).map(endpointView) };
    },
    POST: async (event) => {
      const storeId = ownStore(event);
      const { value } = await readJsonObject(event);
      const { endpoint, secret } = createEndpoint(ctx, storeId, value);
      event.res.status = 201;
      return { ...endpointView(endpoint), secret };
    },
  });

  defineRoute(app, '/v1/stores/:id/webhooks/:wid', {
    GET: (event) => endpointView(getEndpoint(ctx, ownStore(event), routeParam(event, 'wid'))),
    POST: async (event) => {
      const storeId = ownStore(event);
      const { value } = await readJsonObject(event);
      return endpointView(updateEndpoint(ctx, storeId, routeParam(event, 'wid'), value));
    },
    DELETE: (event) => ({ ...endpointView(deleteEndpoint(ctx, ownStore(event), routeParam(event, 'wid'))), deleted: true }),
  });

  defineRoute(app, '/v1/stores/:id/webhooks/:wid/rotate-secret', {
    POST: (event) => {
      const { endpoint, secret } = rotateEndpointSecret(ctx, ownStore(event), routeParam(event, 'wid'));
      return { ...endpointView(endpoint), secret };
    },
  });

  defineRoute(app, '/v1/stores/:id/webhooks/:wid/test', {
    POST: async (event) => {
      const id = queueTestDelivery(ctx, ownStore(event), routeParam(event, 'wid'));
      // Answered after the first attempt, so the caller sees the receiver's response at once.
      await rt.webhooks.deliverNow(id);
      event.res.status = 201;
      return deliveryView(getDelivery(ctx, id), ctx.repos.webhookDeliveries.attempts(id));
    },
  });

  defineRoute(app, '/v1/stores/:id/callback-secret/rotate', {
    POST: (event) => {
      const { secret, previousExpiresAt } = rotateCallbackSecret(ctx, ownStore(event));
      return { object: 'callback_secret', secret, previous_secret_expires_at: previousExpiresAt === null ? null : new Date(previousExpiresAt).toISOString() };
    },
  });
}
