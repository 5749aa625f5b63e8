import type { Db } from './connection.ts';

export interface CachedResponse {
  requestHash: string;
  status: number;
  body: string;
  createdAt: number;
}

export type IdempotencyRepo = ReturnType<typeof createIdempotencyRepo>;

export function createIdempotencyRepo(db: Db) {
  const get = db.prepare<[string, string], { request_hash: string; status: number; body: string; created_at: number }>(
    'SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE api_key_id = ? AND key = ?',
  );
  const put = db.prepare(
    `INSERT INTO idempotency_keys (api_key_id, key, request_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (api_key_id, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
       body = excluded.body, created_at = excluded.created_at`,
  );
  const purge = db.prepare<[number, number]>('DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE created_at < ? LIMIT ?)');
  return {
    get(apiKeyId: string, key: string): CachedResponse | null {
      const r = get.get(apiKeyId, key);
      return r ? { requestHash: r.request_hash, status: r.status, body: r.body, createdAt: r.created_at } : null;
    },
    put(apiKeyId: string, key: string, r: CachedResponse): void {
      put.run(apiKeyId, key, r.requestHash, r.status, r.body, r.createdAt);
    },
    /** Deletes up to limit entries created before the cutoff; returns how many. */
    purgeBefore(cutoff: number, limit: number): number {
      return purge.run(cutoff, limit).changes;
    },
  };
}
