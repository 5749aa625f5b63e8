import { toIso, toIsoOrNull } from '../clock.ts';
import type { Store } from './store.ts';

/** The store as the CLI's --json and the API show it. */
export function storeView(s: Store) {
  return {
    id: s.id,
    object: 'store' as const,
    name: s.name,
    mode: s.mode,
    confirmations_required: s.confirmationsRequired,
    expiry_minutes: s.expiryMinutes,
    late_window_minutes: s.lateWindowMinutes,
    logo_url: s.logoUrl,
    brand_color: s.brandColor,
    created_at: toIso(s.createdAt),
    archived_at: toIsoOrNull(s.archivedAt),
  };
}
