import type { Db } from './connection.ts';

export type PaymentSpendsRepo = ReturnType<typeof createPaymentSpendsRepo>;

/** What each payment's transaction spends, to tell a replacement from a second payment (migration 0007). */
export function createPaymentSpendsRepo(db: Db) {
  const insert = db.prepare<[string, string]>('INSERT OR IGNORE INTO payment_spends (outpoint, txid) VALUES (?, ?)');
  const spenders = db.prepare<[string, string], string>('SELECT txid FROM payment_spends WHERE outpoint = ? AND txid <> ?').pluck();
  // Rare (a tracked payment gone from the mempool), so no index on txid: the table holds ~1,000 blocks' payments.
  const spentBy = db.prepare<[string], string>('SELECT DISTINCT outpoint FROM payment_spends WHERE txid IN (SELECT value FROM json_each(?))').pluck();
  const prune = db.prepare<[number]>(
    `DELETE FROM payment_spends WHERE txid NOT IN (SELECT txid FROM payments WHERE status = 'mempool' OR block_height >= ?)`,
  );
  return {
    record(txid: string, outpoints: readonly string[]): void {
      for (const o of outpoints) insert.run(o, txid);
    },
    /** Payments' transactions, other than `txid`, that spend any of `outpoints`: `txid` conflicts with them. */
    conflicting(txid: string, outpoints: readonly string[]): Set<string> {
      return new Set(outpoints.flatMap((o) => spenders.all(o, txid)));
    },
    /** The outpoints these transactions spend. */
    spentBy(txids: readonly string[]): string[] {
      return spentBy.all(JSON.stringify(txids));
    },
    /** Forgets the transactions no payment waits on that were not mined from `minedFrom` up. */
    prune(minedFrom: number): void {
      prune.run(minedFrom);
    },
  };
}
