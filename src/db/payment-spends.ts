import type { Db } from './connection.ts';

export type PaymentSpendsRepo = ReturnType<typeof createPaymentSpendsRepo>;

/** What each payment's transaction spends, to tell a replacement from a second payment (migration 0007). */
export function createPaymentSpendsRepo(db: Db) {
  const insert = db.prepare<[string, string]>('INSERT OR IGNORE INTO payment_spends (outpoint, txid) VALUES (?, ?)');
  const spenders = db.prepare<[string, string], string>('SELECT txid FROM payment_spends WHERE outpoint = ? AND txid <> ?').pluck();
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
    /** Forgets the transactions no payment waits on that were not mined from `minedFrom` up. */
    prune(minedFrom: number): void {
      prune.run(minedFrom);
    },
  };
}
