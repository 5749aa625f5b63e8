import type { Db } from './connection.ts';

export type MempoolSpendsRepo = ReturnType<typeof createMempoolSpendsRepo>;

/** What each unconfirmed payment's transaction spends, to tell a replacement from a second payment (migration 0007). */
export function createMempoolSpendsRepo(db: Db) {
  const insert = db.prepare<[string, string]>('INSERT OR IGNORE INTO mempool_spends (outpoint, txid) VALUES (?, ?)');
  const spenders = db.prepare<[string, string], string>(
    `SELECT s.txid FROM mempool_spends s WHERE s.outpoint = ? AND s.txid <> ?
       AND EXISTS (SELECT 1 FROM payments p WHERE p.txid = s.txid AND p.status = 'mempool')`,
  ).pluck();
  const prune = db.prepare(`DELETE FROM mempool_spends WHERE txid NOT IN (SELECT txid FROM payments WHERE status = 'mempool')`);
  return {
    record(txid: string, outpoints: readonly string[]): void {
      for (const o of outpoints) insert.run(o, txid);
    },
    /** The transactions of unconfirmed payments, other than `txid`, that spend any of `outpoints`: `txid` replaced them. */
    replacedBy(txid: string, outpoints: readonly string[]): Set<string> {
      return new Set(outpoints.flatMap((o) => spenders.all(o, txid)));
    },
    /** Forgets the transactions no payment waits on any more (mined, replaced). */
    prune(): void {
      prune.run();
    },
  };
}
