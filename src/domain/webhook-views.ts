import { toIso, toIsoOrNull } from '../clock.ts';
import type { EndpointRecord } from '../db/webhook-endpoints.ts';
import { isSetAside, type AttemptRecord, type DeliveryRecord } from '../db/webhook-deliveries.ts';

export function endpointView(e: EndpointRecord) {
  return {
    id: e.id,
    object: 'webhook_endpoint' as const,
    store_id: e.storeId,
    url: e.url,
    description: e.description,
    enabled_events: e.enabledEvents,
    status: e.enabled ? ('enabled' as const) : ('disabled' as const),
    previous_secret_expires_at: toIsoOrNull(e.secrets.previous ? e.secrets.previousExpiresAt : null),
    created_at: toIso(e.createdAt),
  };
}

export function deliveryView(d: DeliveryRecord, attempts?: AttemptRecord[]) {
  // A set-aside dead letter's last word is its endpoint's state (last_error): an earlier attempt's code and
  // body beside it read as the receiver's last answer. Those stay in attempt_log.
  const setAside = isSetAside(d);
  return {
    id: d.id,
    object: 'webhook_delivery' as const,
    event_id: d.eventId,
    store_id: d.storeId,
    endpoint_id: d.endpointId,
    url: d.url,
    status: d.status,
    attempts: d.attempts,
    total_attempts: d.totalAttempts,
    next_attempt_at: toIsoOrNull(d.nextAttemptAt),
    last_attempt_at: toIsoOrNull(d.lastAttemptAt),
    last_status_code: setAside ? null : d.lastStatusCode,
    last_error: d.lastError,
    response_body: setAside ? null : d.responseBody,
    created_at: toIso(d.createdAt),
    completed_at: toIsoOrNull(d.completedAt),
    ...(attempts
      ? {
          attempt_log: attempts.map((a) => ({
            n: a.n,
            started_at: toIso(a.startedAt),
            duration_ms: a.durationMs,
            status_code: a.statusCode,
            error: a.error,
            response_body: a.responseBody,
          })),
        }
      : {}),
  };
}
