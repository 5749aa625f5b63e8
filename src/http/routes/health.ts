import type { H3 } from 'h3';
import type { Runtime } from '../../runtime.ts';
import { defineRoute } from '../internal/route.ts';

export function registerHealthRoutes(app: H3, rt: Runtime): void {
  defineRoute(app, '/healthz', {
    GET: (event) => {
      // Read from memory: /healthz still answers after a failed fdatasync, to say so.
      event.context.readsNoData = true;
      const report = rt.health();
      event.res.status = report.status === 'ok' ? 200 : 503;
      event.res.headers.set('cache-control', 'no-store');
      return report;
    },
  });
}
