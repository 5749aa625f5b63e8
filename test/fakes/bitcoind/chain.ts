// The block index (active chain plus stale branches) and the UTXO set with
// per-block undo data, so a disconnect restores exactly what the block spent.
import * as bitcoin from 'bitcoinjs-lib';
import { WORK_PER_BLOCK, toHex } from './consensus.ts';

export interface Coin {
  txid: string;
  vout: number;
  value: bigint;
  script: Uint8Array;
  height: number;
  coinbase: boolean;
}

export interface BlockRecord {
  hash: string;
  height: number;
  block: bitcoin.Block;
  /** Serialized block with witnesses: the getblock verbosity 0 / rawblock body. */
  raw: Uint8Array;
  txs: bitcoin.Transaction[];
  txids: string[];
  prev: BlockRecord | null;
  chainwork: bigint;
  /** Coins spent by each non-coinbase transaction, in input order; null until connected. */
  undo: Coin[][] | null;
  pruned: boolean;
}

export function outpointKey(txid: string, vout: number): string {
  return `${txid}:${vout}`;
}

export function inputTxid(input: bitcoin.TxInput): string {
  return toHex(Uint8Array.from(input.hash).reverse());
}

/** Core keeps provably unspendable outputs (OP_RETURN) out of the UTXO set. */
function isUnspendable(script: Uint8Array): boolean {
  return script.length > 0 && script[0] === bitcoin.opcodes.OP_RETURN;
}

export class Chain {
  readonly #index = new Map<string, BlockRecord>();
  readonly #active: BlockRecord[] = [];
  readonly #utxo = new Map<string, Coin>();
  /** txid -> block on the active chain (what -txindex would answer). */
  readonly #txBlock = new Map<string, BlockRecord>();

  constructor(genesis: bitcoin.Block) {
    const record = this.#record(genesis, null);
    // The genesis coinbase is not part of the UTXO set in Core either.
    record.undo = [];
    this.#index.set(record.hash, record);
    this.#active.push(record);
  }

  get tip(): BlockRecord {
    return this.#active[this.#active.length - 1]!;
  }

  get height(): number {
    return this.#active.length - 1;
  }

  byHash(hash: string): BlockRecord | undefined {
    return this.#index.get(hash);
  }

  atHeight(height: number): BlockRecord | undefined {
    return this.#active[height];
  }

  isActive(record: BlockRecord): boolean {
    return this.#active[record.height] === record;
  }

  /** Every known block, stale branches included. */
  allBlocks(): IterableIterator<BlockRecord> {
    return this.#index.values();
  }

  coin(txid: string, vout: number): Coin | undefined {
    return this.#utxo.get(outpointKey(txid, vout));
  }

  coins(): IterableIterator<Coin> {
    return this.#utxo.values();
  }

  /** The active-chain block holding `txid`, as -txindex finds it. */
  blockOfTx(txid: string): BlockRecord | undefined {
    return this.#txBlock.get(txid);
  }

  /** Median of the last 11 block times ending at `record` (GetMedianTimePast). */
  medianTimePast(record: BlockRecord): number {
    const times: number[] = [];
    for (let r: BlockRecord | null = record; r && times.length < 11; r = r.prev) times.push(r.block.timestamp);
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)]!;
  }

  /** Connects a block on top of the tip. Throws if it spends a coin that does not exist. */
  connect(block: bitcoin.Block): BlockRecord {
    const record = this.#record(block, this.tip);
    if (record.block.prevHash && toHex(Uint8Array.from(record.block.prevHash).reverse()) !== this.tip.hash) {
      throw new Error(`fake bitcoind: block ${record.hash} does not extend the tip`);
    }
    const undo: Coin[][] = [];
    const added: string[] = [];
    try {
      record.txs.forEach((tx, i) => {
        const txid = record.txids[i]!;
        if (i > 0) {
          const spent: Coin[] = [];
          undo.push(spent);
          for (const input of tx.ins) {
            const key = outpointKey(inputTxid(input), input.index);
            const coin = this.#utxo.get(key);
            if (!coin) throw new Error(`fake bitcoind: ${txid} spends missing or spent output ${key}`);
            this.#utxo.delete(key);
            spent.push(coin);
          }
        }
        tx.outs.forEach((out, vout) => {
          if (isUnspendable(out.script)) return;
          const key = outpointKey(txid, vout);
          this.#utxo.set(key, { txid, vout, value: out.value, script: out.script, height: record.height, coinbase: i === 0 });
          added.push(key);
        });
      });
    } catch (err) {
      // Leave the UTXO set as it was: a failed connect must not corrupt the fake.
      for (const coin of undo.flat()) this.#utxo.set(outpointKey(coin.txid, coin.vout), coin);
      for (const key of added) this.#utxo.delete(key);
      throw err;
    }
    record.undo = undo;
    this.#index.set(record.hash, record);
    this.#active.push(record);
    for (const txid of record.txids) this.#txBlock.set(txid, record);
    return record;
  }

  /** Disconnects the tip, restoring the coins its transactions spent. The block stays known (stale). */
  disconnectTip(): BlockRecord {
    const record = this.tip;
    if (!record.prev) throw new Error('fake bitcoind: cannot disconnect the genesis block');
    for (let i = record.txs.length - 1; i >= 0; i--) {
      const txid = record.txids[i]!;
      record.txs[i]!.outs.forEach((_, vout) => this.#utxo.delete(outpointKey(txid, vout)));
      if (i > 0) for (const coin of record.undo![i - 1]!) this.#utxo.set(outpointKey(coin.txid, coin.vout), coin);
      if (this.#txBlock.get(txid) === record) this.#txBlock.delete(txid);
    }
    this.#active.pop();
    return record;
  }

  #record(block: bitcoin.Block, prev: BlockRecord | null): BlockRecord {
    const txs = block.transactions ?? [];
    return {
      hash: block.getId(),
      height: prev ? prev.height + 1 : 0,
      block,
      raw: block.toBuffer(),
      txs,
      txids: txs.map((tx) => tx.getId()),
      prev,
      chainwork: (prev?.chainwork ?? 0n) + WORK_PER_BLOCK,
      undo: null,
      pruned: false,
    };
  }
}
