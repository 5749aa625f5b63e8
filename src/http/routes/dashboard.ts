import type { H3 } from 'h3';
import { ApiError } from '../../domain/errors.ts';
import { defineRoute } from '../internal/route.ts';

// The spec's dashboard endpoints take a session cookie, not an API key (spec
// 5), and a missing one is 401 auth_required. Till has no dashboard, so no
// session exists and every call is that 401, whatever the store or the
// Authorization header: it tells no one which stores exist. The message names
// what does the same job.

export function registerDashboardRoutes(app: H3): void {
  defineRoute(app, '/v1/stores/:id/test-invoice', {
    POST: () => {
      throw new ApiError(
        'auth_required',
        'this dashboard endpoint needs a session, and Till has no dashboard: create a test invoice at POST /v1/invoices with a test store\'s API key (svc_test_…; see `till keys mint --help`)',
      );
    },
  });
}
