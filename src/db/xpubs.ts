import type { Db } from './connection.ts';
import type { Env } from '../domain/store.ts';

export interface XpubRecord {
  id: string;
  storeId: string;
  env: Env;
  keyText: string;
  scriptType: string;
  keyNetwork: string;
  gapLimit: number;
  nextIndex: number;
  lastFundedIndex: number | null;
  lastFundedAt: number | null;
  status: 'active' | 'retired';
  createdAt: number;
  retiredAt: number | null;
}

interface Row {
  id: string;
  store_id: string;
  env: Env;
  key_text: string;
  script_type: string;
  key_network: string;
  gap_limit: number;
  next_index: number;
  last_funded_index: number | null;
  last_funded_at: number | null;
  status: 'active' | 'retired';
  created_at: number;
  retired_at: number | null;
}

const toRecord = (r: Row): XpubRecord => ({
  id: r.id,
  storeId: r.store_id,
  env: r.env,
  keyText: r.key_text,
  scriptType: r.script_type,
  keyNetwork: r.key_network,
  gapLimit: r.gap_limit,
  nextIndex: r.next_index,
  lastFundedIndex: r.last_funded_index,
  lastFundedAt: r.last_funded_at,
  status: r.status,
  createdAt: r.created_at,
  retiredAt: r.retired_at,
});

export type XpubsRepo = ReturnType<typeof createXpubsRepo>;

export function createXpubsRepo(db: Db) {
  const byId = db.prepare<[string], Row>('SELECT * FROM xpubs WHERE id = ?');
  const active = db.prepare<[string, Env], Row>("SELECT * FROM xpubs WHERE store_id = ? AND env = ? AND status = 'active'");
  const byStore = db.prepare<[string], Row>('SELECT * FROM xpubs WHERE store_id = ? ORDER BY id');
  const all = db.prepare<[], Row>('SELECT * FROM xpubs ORDER BY id');
  const allActive = db.prepare<[], Row>("SELECT * FROM xpubs WHERE status = 'active'");
  const insert = db.prepare(
    `INSERT INTO xpubs (id, store_id, env, key_text, script_type, key_network, gap_limit, next_index, status, created_at)
     VALUES (@id, @storeId, @env, @keyText, @scriptType, @keyNetwork, @gapLimit, 0, 'active', @createdAt)`,
  );
  const retire = db.prepare<[number, string]>("UPDATE xpubs SET status = 'retired', retired_at = ? WHERE id = ? AND status = 'active'");
  const reactivate = db.prepare<[number, string]>("UPDATE xpubs SET status = 'active', retired_at = NULL, gap_limit = ? WHERE id = ?");
  const skip = db.prepare<[number, string]>('UPDATE xpubs SET next_index = next_index + ? WHERE id = ?');
  // One statement finds the store's active key and moves its index on: a creation's read of the key, then
  // its update by id, cost ~1.4 µs more (docs/PERFORMANCE.md, twenty-ninth round).
  const takeActive = db.prepare<[string, Env], Row>("UPDATE xpubs SET next_index = next_index + 1 WHERE store_id = ? AND env = ? AND status = 'active' RETURNING *");
  const recordFunding = db.prepare<[number, number, string, number]>(
    'UPDATE xpubs SET last_funded_index = MAX(COALESCE(last_funded_index, -1), ?), last_funded_at = ? WHERE id = ? AND ? >= 0',
  );
  // Read from the payments side: invoices have no index by xpub, and counting payments are few next to invoices.
  const recountFunding = db.prepare<{ id: string; index: number }>(
    `UPDATE xpubs SET
       last_funded_index = (SELECT MAX(i.address_index) FROM payments p JOIN invoices i ON i.id = p.invoice_id WHERE p.status <> 'replaced' AND i.xpub_id = @id),
       last_funded_at = (SELECT MAX(p.first_seen_at) FROM payments p JOIN invoices i ON i.id = p.invoice_id WHERE p.status <> 'replaced' AND i.xpub_id = @id)
     WHERE id = @id AND last_funded_index = @index`,
  );
  return {
    get(id: string): XpubRecord | null {
      const row = byId.get(id);
      return row ? toRecord(row) : null;
    },
    findActive(storeId: string, env: Env): XpubRecord | null {
      const row = active.get(storeId, env);
      return row ? toRecord(row) : null;
    },
    list(storeId?: string): XpubRecord[] {
      return (storeId ? byStore.all(storeId) : all.all()).map(toRecord);
    },
    listActive(): XpubRecord[] {
      return allActive.all().map(toRecord);
    },
    insert(rec: Pick<XpubRecord, 'id' | 'storeId' | 'env' | 'keyText' | 'scriptType' | 'keyNetwork' | 'gapLimit' | 'createdAt'>): void {
      insert.run(rec);
    },
    retire(id: string, at: number): boolean {
      return retire.run(at, id).changes === 1;
    },
    reactivate(id: string, gapLimit: number): void {
      reactivate.run(gapLimit, id);
    },
    /** Moves the next receive index `count` further on, handing nothing out. */
    skipIndexes(id: string, count: number): void {
      skip.run(count, id);
    },
    /**
     * Hands out the next receive index of the store's active key for `env`,
     * with the key as it was before (null: no active key). Callers run it
     * inside the transaction that uses it: a refusal after it rolls it back.
     */
    takeActiveIndex(storeId: string, env: Env): { xpub: XpubRecord; index: number } | null {
      const row = takeActive.get(storeId, env);
      if (!row) return null;
      const index = row.next_index - 1;
      return { xpub: { ...toRecord(row), nextIndex: index }, index };
    },
    recordFunding(id: string, index: number, at: number): void {
      recordFunding.run(index, at, id, index);
    },
    /** Funding as the payments that still count tell it, if `index` was the highest funded: its payments stopped counting (replaced, dropped by a reorg). */
    recountFunding(id: string, index: number): void {
      recountFunding.run({ id, index });
    },
  };
}
