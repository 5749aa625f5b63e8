import type { Db } from './connection.ts';
import type { Env } from '../domain/store.ts';

export interface ApiKeyRecord {
  id: string;
  storeId: string;
  env: Env;
  secretHash: Buffer;
  last4: string;
  createdAt: number;
  revokedAt: number | null;
}

interface Row {
  id: string;
  store_id: string;
  env: Env;
  secret_hash: Buffer;
  last4: string;
  created_at: number;
  revoked_at: number | null;
}

const toRecord = (r: Row): ApiKeyRecord => ({
  id: r.id,
  storeId: r.store_id,
  env: r.env,
  secretHash: r.secret_hash,
  last4: r.last4,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;

export function createApiKeysRepo(db: Db) {
  const byHash = db.prepare<[Buffer], Row>('SELECT * FROM api_keys WHERE secret_hash = ?');
  const byId = db.prepare<[string], Row>('SELECT * FROM api_keys WHERE id = ?');
  const byStore = db.prepare<[string], Row>('SELECT * FROM api_keys WHERE store_id = ? ORDER BY id');
  const all = db.prepare<[], Row>('SELECT * FROM api_keys ORDER BY id');
  const insert = db.prepare(
    'INSERT INTO api_keys (id, store_id, env, secret_hash, last4, created_at) VALUES (@id, @storeId, @env, @secretHash, @last4, @createdAt)',
  );
  const revoke = db.prepare<[number, string]>('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');
  return {
    findByHash(hash: Buffer): ApiKeyRecord | null {
      const row = byHash.get(hash);
      return row ? toRecord(row) : null;
    },
    get(id: string): ApiKeyRecord | null {
      const row = byId.get(id);
      return row ? toRecord(row) : null;
    },
    list(storeId?: string): ApiKeyRecord[] {
      return (storeId ? byStore.all(storeId) : all.all()).map(toRecord);
    },
    insert(rec: Omit<ApiKeyRecord, 'revokedAt'>): void {
      insert.run(rec);
    },
    revoke(id: string, at: number): boolean {
      return revoke.run(at, id).changes === 1;
    },
  };
}
