import { H3 } from 'h3';
import { ApiError } from '../domain/errors.ts';
import type { Runtime } from '../runtime.ts';
import { createDirectRoutes } from './internal/direct-routes.ts';
import { apiErrorOf, createRequestLog, requestContext } from './middleware/request-context.ts';
import { registerCheckoutRoutes } from './routes/checkout.ts';
import { registerDashboardRoutes } from './routes/dashboard.ts';
import { registerHealthRoutes } from './routes/health.ts';
import { registerInvoiceRoutes } from './routes/invoices.ts';
import { registerOpenApiRoute } from './routes/openapi.ts';
import { registerWebhookRoutes } from './routes/webhooks.ts';
import { registerXpubHelpRoute } from './routes/xpub-help.ts';

/** The whole HTTP surface as an h3 app: usable in-process (app.request) or served on a socket. */
export function createApp(rt: Runtime): H3 {
  // A malformed escape (/v1/invoices/%zz) reaches our routes instead of h3's
  // own 400 (not the error envelope, no X-Request-Id): routeParam answers it
  // with not_found, and unknown paths with the 404 below.
  const app = new H3({ silent: true, allowMalformedURL: true });
  const log = createRequestLog(rt.logger);
  // Nothing read from a commit still waiting for its fdatasync is answered before it returns.
  const { writes } = rt.ctx;
  const direct = createDirectRoutes(app, {
    log,
    whenDurable: (read) => writes.whenDurable(read),
    durable: () => writes.durable(),
    errorOf: (err, requestId) => apiErrorOf(err, requestId, rt.logger),
  });
  app.use(requestContext(rt.logger, log, () => writes.durable()));
  registerHealthRoutes(app, rt);
  registerOpenApiRoute(app);
  registerInvoiceRoutes(app, rt, direct);
  registerWebhookRoutes(app, rt);
  registerDashboardRoutes(app);
  registerCheckoutRoutes(app, rt, direct.gets);
  registerXpubHelpRoute(app, rt.ctx.config.network);
  app.all('/**', (event) => {
    throw new ApiError('not_found', `no route for ${event.req.method} ${event.url.pathname}`);
  });
  return app;
}
