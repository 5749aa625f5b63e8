import type { H3 } from 'h3';
import type { Runtime } from '../../runtime.ts';
import { defineRoute } from '../internal/route.ts';

export function registerHealthRoutes(app: H3, rt: Runtime): void {
  defineRoute(app, '/healthz', {
    GET: (event) => {
      const report = rt.health();
      event.res.status = report.status === 'ok' ? 200 : 503;
      event.res.headers.set('cache-control', 'no-store');
      return report;
    },
  });
}
