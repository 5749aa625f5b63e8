import { H3 } from 'h3';
import { ApiError } from '../domain/errors.ts';
import type { Runtime } from '../runtime.ts';
import { requestContext } from './middleware/request-context.ts';
import { registerHealthRoutes } from './routes/health.ts';
import { registerInvoiceRoutes } from './routes/invoices.ts';
import { registerWebhookRoutes } from './routes/webhooks.ts';

/** The whole HTTP surface as an h3 app: usable in-process (app.request) or served on a socket. */
export function createApp(rt: Runtime): H3 {
  const app = new H3({ silent: true });
  app.use(requestContext(rt.logger));
  registerHealthRoutes(app, rt);
  registerInvoiceRoutes(app, rt);
  registerWebhookRoutes(app, rt);
  app.all('/**', (event) => {
    throw new ApiError('not_found', `no route for ${event.req.method} ${event.url.pathname}`);
  });
  return app;
}
