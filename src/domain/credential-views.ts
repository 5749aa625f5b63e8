import { toIso, toIsoOrNull } from '../clock.ts';
import { maskApiKey } from '../auth/api-keys.ts';
import type { ApiKeyRecord } from '../db/api-keys.ts';
import type { XpubRecord } from '../db/xpubs.ts';
import { gapHeadroom } from './gap-limit.ts';

export function apiKeyView(k: ApiKeyRecord) {
  return {
    id: k.id,
    object: 'api_key' as const,
    store_id: k.storeId,
    env: k.env,
    masked: maskApiKey(k.env, k.last4),
    created_at: toIso(k.createdAt),
    revoked_at: toIsoOrNull(k.revokedAt),
  };
}

export function xpubView(x: XpubRecord) {
  return {
    id: x.id,
    object: 'xpub' as const,
    store_id: x.storeId,
    env: x.env,
    key: x.keyText,
    script_type: x.scriptType,
    key_network: x.keyNetwork,
    status: x.status,
    gap_limit: x.gapLimit,
    next_index: x.nextIndex,
    last_funded_index: x.lastFundedIndex,
    /** Indexes left before live invoices stop with gap_limit_exceeded (0 or less: at the limit, unless funded in the last 24 h). */
    gap_headroom: gapHeadroom(x),
    created_at: toIso(x.createdAt),
    retired_at: toIsoOrNull(x.retiredAt),
  };
}
