import type { Db } from './connection.ts';

export interface PooledAddress {
  index: number;
  address: string;
  scriptHex: string;
}

export type AddressPoolRepo = ReturnType<typeof createAddressPoolRepo>;

export function createAddressPoolRepo(db: Db) {
  const take = db.prepare<[string, number], { address: string; script_hex: string }>(
    'DELETE FROM address_pool WHERE xpub_id = ? AND idx = ? RETURNING address, script_hex',
  );
  const highest = db.prepare<[string], { idx: number | null }>('SELECT MAX(idx) AS idx FROM address_pool WHERE xpub_id = ?');
  const count = db.prepare<[string, number], { n: number }>('SELECT COUNT(*) AS n FROM address_pool WHERE xpub_id = ? AND idx >= ?');
  const insert = db.prepare<[string, number, string, string]>(
    'INSERT OR IGNORE INTO address_pool (xpub_id, idx, address, script_hex) VALUES (?, ?, ?, ?)',
  );
  const peek = db.prepare<[string, number, number], { idx: number; address: string; script_hex: string }>(
    'SELECT idx, address, script_hex FROM address_pool WHERE xpub_id = ? AND idx >= ? ORDER BY idx LIMIT ?',
  );
  return {
    /** Removes and returns the pooled address at index, or null if it was not derived yet. */
    take(xpubId: string, index: number): PooledAddress | null {
      const row = take.get(xpubId, index);
      return row ? { index, address: row.address, scriptHex: row.script_hex } : null;
    },
    highestIndex(xpubId: string): number | null {
      return highest.get(xpubId)?.idx ?? null;
    },
    countFrom(xpubId: string, fromIndex: number): number {
      return count.get(xpubId, fromIndex)?.n ?? 0;
    },
    peek(xpubId: string, fromIndex: number, limit: number): PooledAddress[] {
      return peek.all(xpubId, fromIndex, limit).map((r) => ({ index: r.idx, address: r.address, scriptHex: r.script_hex }));
    },
    insertMany(xpubId: string, rows: PooledAddress[]): void {
      for (const r of rows) insert.run(xpubId, r.index, r.address, r.scriptHex);
    },
  };
}
