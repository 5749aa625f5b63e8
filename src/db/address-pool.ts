import type { Db } from './connection.ts';

export interface PooledAddress {
  index: number;
  address: string;
  scriptHex: string;
}

export type AddressPoolRepo = ReturnType<typeof createAddressPoolRepo>;

export function createAddressPoolRepo(db: Db) {
  const from = db.prepare<[string, number, number], { idx: number; address: string; script_hex: string }>(
    'SELECT idx, address, script_hex FROM address_pool WHERE xpub_id = ? AND idx >= ? ORDER BY idx LIMIT ?',
  );
  const highest = db.prepare<[string], { idx: number | null }>('SELECT MAX(idx) AS idx FROM address_pool WHERE xpub_id = ?');
  const lowest = db.prepare<[string], { idx: number | null }>('SELECT MIN(idx) AS idx FROM address_pool WHERE xpub_id = ?');
  const insert = db.prepare<[string, number, string, string]>(
    'INSERT OR IGNORE INTO address_pool (xpub_id, idx, address, script_hex) VALUES (?, ?, ?, ?)',
  );
  const deleteBelow = db.prepare<[string, number]>('DELETE FROM address_pool WHERE xpub_id = ? AND idx < ?');
  return {
    /** Up to `limit` pooled addresses from `index` on, in index order (a gap where one was not derived). */
    from(xpubId: string, index: number, limit: number): PooledAddress[] {
      return from.all(xpubId, index, limit).map((r) => ({ index: r.idx, address: r.address, scriptHex: r.script_hex }));
    },
    highestIndex(xpubId: string): number | null {
      return highest.get(xpubId)?.idx ?? null;
    },
    lowestIndex(xpubId: string): number | null {
      return lowest.get(xpubId)?.idx ?? null;
    },
    insertMany(xpubId: string, rows: PooledAddress[]): void {
      for (const r of rows) insert.run(xpubId, r.index, r.address, r.scriptHex);
    },
    /** Drops the rows below this index (handed out already). */
    deleteBelow(xpubId: string, index: number): void {
      deleteBelow.run(xpubId, index);
    },
  };
}
