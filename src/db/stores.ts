import type { Db } from './connection.ts';
import type { Store } from '../domain/store.ts';

interface StoreRow {
  id: string;
  name: string;
  mode: 'live' | 'test';
  confirmations_required: number;
  expiry_minutes: number;
  late_window_minutes: number;
  logo_url: string | null;
  brand_color: string | null;
  created_at: number;
  archived_at: number | null;
}

function toStore(r: StoreRow): Store {
  return {
    id: r.id,
    name: r.name,
    mode: r.mode,
    confirmationsRequired: r.confirmations_required,
    expiryMinutes: r.expiry_minutes,
    lateWindowMinutes: r.late_window_minutes,
    logoUrl: r.logo_url,
    brandColor: r.brand_color,
    createdAt: r.created_at,
    archivedAt: r.archived_at,
  };
}

export type StoresRepo = ReturnType<typeof createStoresRepo>;

export function createStoresRepo(db: Db) {
  const byId = db.prepare<[string], StoreRow>('SELECT * FROM stores WHERE id = ?');
  const all = db.prepare<[], StoreRow>('SELECT * FROM stores ORDER BY id');
  const insert = db.prepare(
    `INSERT INTO stores (id, name, mode, confirmations_required, expiry_minutes, late_window_minutes, logo_url, brand_color, created_at)
     VALUES (@id, @name, @mode, @confirmationsRequired, @expiryMinutes, @lateWindowMinutes, @logoUrl, @brandColor, @createdAt)`,
  );
  const update = db.prepare(
    `UPDATE stores SET name = @name, mode = @mode, confirmations_required = @confirmationsRequired, expiry_minutes = @expiryMinutes,
       late_window_minutes = @lateWindowMinutes, logo_url = @logoUrl, brand_color = @brandColor, archived_at = @archivedAt
     WHERE id = @id`,
  );
  return {
    get(id: string): Store | null {
      const row = byId.get(id);
      return row ? toStore(row) : null;
    },
    list(): Store[] {
      return all.all().map(toStore);
    },
    insert(store: Store): void {
      insert.run(store);
    },
    update(store: Store): void {
      update.run(store);
    },
  };
}
