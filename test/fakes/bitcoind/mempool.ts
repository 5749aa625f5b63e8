// The mempool: entries in arrival order (parents before children) and Core's
// mempool sequence number, which every addition and every removal consumes,
// including removals for block inclusion that are never published.
import type * as bitcoin from 'bitcoinjs-lib';
import { inputTxid, outpointKey } from './chain.ts';

export interface MempoolEntry {
  tx: bitcoin.Transaction;
  txid: string;
  fee: bigint;
  /** Milliseconds since the epoch when the transaction entered the pool. */
  timeMs: number;
  /** Tip height when the transaction entered the pool. */
  height: number;
}

export class Mempool {
  readonly #entries = new Map<string, MempoolEntry>();
  /** outpoint -> txid of the mempool transaction spending it. */
  readonly #spenders = new Map<string, string>();
  // CTxMemPool::m_sequence_number starts at 1.
  #sequence = 1n;

  /** The next mempool sequence number (getrawmempool's `mempool_sequence`). */
  get sequence(): bigint {
    return this.#sequence;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(txid: string): MempoolEntry | undefined {
    return this.#entries.get(txid);
  }

  has(txid: string): boolean {
    return this.#entries.has(txid);
  }

  entries(): MempoolEntry[] {
    return [...this.#entries.values()];
  }

  spenderOf(txid: string, vout: number): string | undefined {
    return this.#spenders.get(outpointKey(txid, vout));
  }

  /** Adds an entry; returns the mempool sequence number the addition used. */
  add(entry: MempoolEntry): bigint {
    this.#entries.set(entry.txid, entry);
    for (const input of entry.tx.ins) this.#spenders.set(outpointKey(inputTxid(input), input.index), entry.txid);
    return this.#sequence++;
  }

  /** Removes an entry; returns the mempool sequence number the removal used. */
  remove(txid: string): bigint {
    const entry = this.#entries.get(txid);
    if (!entry) throw new Error(`fake bitcoind: ${txid} is not in the mempool`);
    this.#entries.delete(txid);
    for (const input of entry.tx.ins) this.#spenders.delete(outpointKey(inputTxid(input), input.index));
    return this.#sequence++;
  }

  /** In-mempool parents of `txid`. */
  parents(txid: string): string[] {
    const entry = this.#entries.get(txid);
    if (!entry) return [];
    return [...new Set(entry.tx.ins.map(inputTxid))].filter((id) => this.#entries.has(id)).sort();
  }

  /** Mempool transactions spending an output of `txid` (which itself need not be in the pool). */
  children(txid: string): string[] {
    const kids = new Set<string>();
    for (const [outpoint, spender] of this.#spenders) if (outpoint.startsWith(`${txid}:`)) kids.add(spender);
    return [...kids];
  }

  /** `txid` (if pooled) and everything in the pool that spends it, directly or not, parents first. */
  withDescendants(txid: string): string[] {
    const found = new Set<string>();
    const visit = (id: string): void => {
      if (found.has(id)) return;
      found.add(id);
      for (const child of this.children(id)) visit(child);
    };
    visit(txid);
    return [...this.#entries.keys()].filter((id) => found.has(id));
  }

  /** `txid` and its in-mempool ancestors, parents first. */
  withAncestors(txid: string): string[] {
    const found = new Set<string>();
    const visit = (id: string): void => {
      if (found.has(id) || !this.#entries.has(id)) return;
      found.add(id);
      for (const parent of this.parents(id)) visit(parent);
    };
    visit(txid);
    return [...this.#entries.keys()].filter((id) => found.has(id));
  }
}
