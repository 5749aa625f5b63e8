import type { Db } from './connection.ts';

export interface ChainBlock {
  height: number;
  hash: string;
  prevHash: string;
}

export type ChainBlocksRepo = ReturnType<typeof createChainBlocksRepo>;

/** The blocks Till has processed, newest kept for finding the fork point of a reorg. */
export function createChainBlocksRepo(db: Db) {
  const tip = db.prepare<[], { height: number; hash: string; prev_hash: string }>('SELECT height, hash, prev_hash FROM chain_blocks ORDER BY height DESC LIMIT 1');
  const byHeight = db.prepare<[number], { height: number; hash: string; prev_hash: string }>('SELECT height, hash, prev_hash FROM chain_blocks WHERE height = ?');
  const insert = db.prepare<[number, string, string, number]>('INSERT OR REPLACE INTO chain_blocks (height, hash, prev_hash, processed_at) VALUES (?, ?, ?, ?)');
  // A block's time need only exceed the median of the 11 before it (consensus): none still unread is older than these.
  const readUpTo = db.prepare<[], number | null>('SELECT MIN(processed_at) FROM (SELECT processed_at FROM chain_blocks ORDER BY height DESC LIMIT 11)').pluck();
  const remove = db.prepare<[number]>('DELETE FROM chain_blocks WHERE height = ?');
  const prune = db.prepare<[number]>('DELETE FROM chain_blocks WHERE height < ?');
  const toBlock = (r: { height: number; hash: string; prev_hash: string } | undefined): ChainBlock | null =>
    r ? { height: r.height, hash: r.hash, prevHash: r.prev_hash } : null;
  return {
    tip: () => toBlock(tip.get()),
    get: (height: number) => toBlock(byHeight.get(height)),
    /**
     * How far Till's view of the chain reaches in time: no block it has yet to read is older. Each block counts
     * at its time, or when Till read it if earlier; the earliest of the last 11, as block times may go back.
     */
    readUpTo: (): number | null => readUpTo.get() ?? null,
    insert(b: ChainBlock, at: number): void {
      insert.run(b.height, b.hash, b.prevHash, at);
    },
    remove(height: number): void {
      remove.run(height);
    },
    /** Keeps the newest `keep` blocks: deeper reorgs than that are not survivable anyway. */
    pruneBelow(height: number): void {
      prune.run(height);
    },
  };
}
