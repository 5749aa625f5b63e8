import type { H3Event } from 'h3';
import { authenticateApiKey, type Caller } from '../../services/api-keys.ts';
import type { Context } from '../../services/context.ts';
import type { DirectRequest } from '../internal/direct-request.ts';

/** The API key caller of this request (spec 5), or the spec's 401/404. */
export function requireApiKey(event: H3Event, ctx: Context): Caller {
  const caller = authenticateApiKey(ctx, event.req.headers.get('authorization'));
  event.context.apiKeyId = caller.apiKey.id;
  return caller;
}

/** requireApiKey for a direct route (src/http/internal/direct-request.ts). */
export function requireApiKeyOf(req: DirectRequest, ctx: Context): Caller {
  const caller = authenticateApiKey(ctx, req.header('authorization'));
  req.keyId = caller.apiKey.id;
  return caller;
}
