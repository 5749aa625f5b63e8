import { Block, Transaction } from 'bitcoinjs-lib';
import { btcToSats } from '../domain/money.ts';
import {
  expectBoolean,
  expectHash,
  expectHex,
  expectInteger,
  expectObject,
  RpcClient,
  RpcError,
  RpcProtocolError,
  RpcUnavailableError,
} from './rpc-client.ts';

export interface ChainInfo {
  /** As bitcoind names it: main, test, testnet4, signet, regtest. */
  chain: string;
  blocks: number;
  bestBlockHash: string;
  initialBlockDownload: boolean;
  pruned: boolean;
  pruneHeight: number | null;
  /** The work of the best chain (Core's hex, read as a number). */
  chainwork: bigint;
}

function expectChainwork(v: unknown, what: string): bigint {
  if (typeof v !== 'string' || !/^[0-9a-f]{1,64}$/i.test(v)) throw new RpcProtocolError(`${what}: expected hex chain work`);
  return BigInt(`0x${v}`);
}

export interface UnspentOutput {
  txid: string;
  vout: number;
  sats: number;
  height: number;
  scriptHex: string;
  /** A coinbase output (false where the node does not say: Core before 25). */
  coinbase: boolean;
}

/**
 * scantxoutset reads the whole UTXO set: minutes on mainnet (more on a
 * Raspberry Pi's disk), far past the 30 s other calls get. bitcoin-cli waits
 * 900 s by default; a pruned stretch's catch-up must not give up sooner and
 * start over forever.
 */
export const SCAN_TIMEOUT_MS = 30 * 60_000;
const SCAN_ABORT_TIMEOUT_MS = 2_000;
export const RPC_PRUNED_OR_MISC = -1;
export const RPC_HEIGHT_OUT_OF_RANGE = -8;
/** Core's "No such mempool or blockchain transaction" / "Transaction not in mempool". */
export const RPC_INVALID_ADDRESS_OR_KEY = -5;

/**
 * An answer of a batch that says the transaction is not there (-5) is an
 * answer; any other error (a full work queue, an internal error) says nothing
 * of it: the call fails, rather than a payment held by the node counting as gone.
 */
function absentOrThrow(answer: RpcError, what: string): void {
  if (answer.code !== RPC_INVALID_ADDRESS_OR_KEY) throw new RpcError(answer.code, `${what}: ${answer.message}`);
}
const GENESIS_PREV_HASH = '0'.repeat(64);

/** The calls Till makes of bitcoind, each answer checked and typed. */
export class Bitcoind {
  readonly rpc: RpcClient;
  constructor(rpc: RpcClient) {
    this.rpc = rpc;
  }

  async getChainInfo(): Promise<ChainInfo> {
    const o = expectObject(await this.rpc.call('getblockchaininfo'), 'getblockchaininfo');
    if (typeof o.chain !== 'string') throw new RpcProtocolError('getblockchaininfo: chain missing');
    const pruned = expectBoolean(o.pruned, 'getblockchaininfo.pruned');
    return {
      chain: o.chain,
      blocks: expectInteger(o.blocks, 'getblockchaininfo.blocks'),
      bestBlockHash: expectHash(o.bestblockhash, 'getblockchaininfo.bestblockhash'),
      initialBlockDownload: expectBoolean(o.initialblockdownload, 'getblockchaininfo.initialblockdownload'),
      pruned,
      pruneHeight: pruned && o.pruneheight !== undefined ? expectInteger(o.pruneheight, 'getblockchaininfo.pruneheight') : null,
      chainwork: expectChainwork(o.chainwork, 'getblockchaininfo.chainwork'),
    };
  }

  async getBlockHash(height: number): Promise<string> {
    return expectHash(await this.rpc.call('getblockhash', [height]), 'getblockhash');
  }

  /** The raw block, parsed; its hash is checked against the one asked for. */
  async getBlock(hash: string): Promise<Block> {
    const hex = expectHex(await this.rpc.call('getblock', [hash, 0]), 'getblock');
    let block: Block;
    try {
      block = Block.fromHex(hex);
    } catch (err) {
      throw new RpcProtocolError(`getblock ${hash}: not a block (${(err as Error).message})`);
    }
    if (block.getId() !== hash) throw new RpcProtocolError(`getblock ${hash}: the block returned has another hash`);
    return block;
  }

  /** The genesis block has no previousblockhash: its header's field is all zeros, as its raw header says. */
  async getBlockHeader(hash: string): Promise<{ prevHash: string; time: number }> {
    const o = expectObject(await this.rpc.call('getblockheader', [hash, true]), 'getblockheader');
    const genesis = expectInteger(o.height, 'getblockheader.height') === 0 && o.previousblockhash === undefined;
    return {
      prevHash: genesis ? GENESIS_PREV_HASH : expectHash(o.previousblockhash, 'getblockheader.previousblockhash'),
      time: expectInteger(o.time, 'getblockheader.time'),
    };
  }

  /** The chain work up to this block, or null when the node does not know it (-5: a node restarted from an older state). */
  async getBlockChainwork(hash: string): Promise<bigint | null> {
    let answer: unknown;
    try {
      answer = await this.rpc.call('getblockheader', [hash, true]);
    } catch (err) {
      if (err instanceof RpcError && err.code === RPC_INVALID_ADDRESS_OR_KEY) return null;
      throw err;
    }
    return expectChainwork(expectObject(answer, 'getblockheader').chainwork, 'getblockheader.chainwork');
  }

  /** Mempool txids with the time each entered the mempool (epoch ms). */
  async getRawMempoolTimes(): Promise<Map<string, number>> {
    const o = expectObject(await this.rpc.call('getrawmempool', [true]), 'getrawmempool');
    const out = new Map<string, number>();
    for (const [txid, entry] of Object.entries(o)) {
      out.set(expectHash(txid, 'getrawmempool txid'), expectInteger(expectObject(entry, 'getrawmempool entry').time, 'getrawmempool time') * 1000);
    }
    return out;
  }

  /** Which of these txids are in the mempool now, with the time each entered it (epoch ms; one batch of getmempoolentry). */
  async inMempool(txids: string[]): Promise<Map<string, number>> {
    const answers = await this.rpc.batch(txids.map((t) => ({ method: 'getmempoolentry', params: [t] })));
    const out = new Map<string, number>();
    answers.forEach((a, i) => {
      if (a instanceof RpcError) absentOrThrow(a, `getmempoolentry ${txids[i]}`);
      else out.set(txids[i]!, expectInteger(expectObject(a, 'getmempoolentry').time, 'getmempoolentry time') * 1000);
    });
    return out;
  }

  /**
   * The mempool transactions spending any of these outpoints (`<txid>:<vout>`), by
   * gettxspendingprevout (Core 24 and later). Empty where the node cannot tell
   * (an older Core): the caller then knows no more than before.
   */
  async mempoolSpenders(outpoints: readonly string[]): Promise<Set<string>> {
    if (outpoints.length === 0) return new Set();
    const outputs = outpoints.map((o) => ({ txid: o.slice(0, 64), vout: Number(o.slice(65)) }));
    let answer: unknown;
    try {
      answer = await this.rpc.call('gettxspendingprevout', [outputs]);
    } catch (err) {
      if (err instanceof RpcError) return new Set();
      throw err;
    }
    if (!Array.isArray(answer) || answer.length !== outputs.length) throw new RpcProtocolError('gettxspendingprevout: expected one answer per output');
    const spenders = new Set<string>();
    answer.forEach((a, i) => {
      const o = expectObject(a, `gettxspendingprevout[${i}]`);
      // A spender in a block (a node with -txospenderindex) is read with its block.
      if (o.spendingtxid !== undefined && o.blockhash === undefined) spenders.add(expectHash(o.spendingtxid, `gettxspendingprevout[${i}].spendingtxid`));
    });
    return spenders;
  }

  /** Mempool transactions by txid, in one batch; ones gone meanwhile are left out. */
  async getRawTransactions(txids: string[]): Promise<Transaction[]> {
    const answers = await this.rpc.batch(txids.map((t) => ({ method: 'getrawtransaction', params: [t, 0] })));
    const out: Transaction[] = [];
    answers.forEach((a, i) => {
      if (a instanceof RpcError) return absentOrThrow(a, `getrawtransaction ${txids[i]}`);
      const tx = Transaction.fromHex(expectHex(a, `getrawtransaction ${txids[i]}`));
      if (tx.getId() !== txids[i]) throw new RpcProtocolError(`getrawtransaction ${txids[i]}: another transaction came back`);
      out.push(tx);
    });
    return out;
  }

  /** ZMQ publisher addresses by topic (sequence, rawtx, hashblock, …). */
  async getZmqEndpoints(): Promise<Record<string, string>> {
    const list = await this.rpc.call('getzmqnotifications');
    if (!Array.isArray(list)) throw new RpcProtocolError('getzmqnotifications: expected an array');
    const out: Record<string, string> = {};
    for (const n of list) {
      const o = expectObject(n, 'getzmqnotifications[]');
      if (typeof o.type === 'string' && typeof o.address === 'string') out[o.type.replace(/^pub/, '')] = o.address;
    }
    return out;
  }

  /** Unspent outputs paying these addresses, from the UTXO set (works on pruned nodes). */
  async scanAddresses(addresses: string[]): Promise<UnspentOutput[]> {
    let answer: unknown;
    try {
      answer = await this.rpc.call('scantxoutset', ['start', addresses.map((a) => `addr(${a})`)], { timeoutMs: SCAN_TIMEOUT_MS });
    } catch (err) {
      // Given up on (deadline, stop, lost connection) while the node may scan on: a scan left
      // running refuses the next one ("Scan already in progress") until it ends by itself.
      if (err instanceof RpcUnavailableError) await this.rpc.call('scantxoutset', ['abort'], { timeoutMs: SCAN_ABORT_TIMEOUT_MS }).catch(() => {});
      throw err;
    }
    const o = expectObject(answer, 'scantxoutset');
    if (o.success !== true || !Array.isArray(o.unspents)) throw new RpcProtocolError('scantxoutset: no unspents');
    return o.unspents.map((u, i) => {
      const x = expectObject(u, `scantxoutset.unspents[${i}]`);
      if (typeof x.amount !== 'number' && typeof x.amount !== 'string') throw new RpcProtocolError('scantxoutset: amount missing');
      let sats: number;
      try {
        sats = btcToSats(x.amount);
      } catch (err) {
        throw new RpcProtocolError(`scantxoutset: ${(err as Error).message}`);
      }
      return {
        txid: expectHash(x.txid, 'scantxoutset.txid'),
        vout: expectInteger(x.vout, 'scantxoutset.vout'),
        sats,
        height: expectInteger(x.height, 'scantxoutset.height'),
        scriptHex: expectHex(x.scriptPubKey, 'scantxoutset.scriptPubKey'),
        // Core before 25 does not say (taken as ordinary: docs/DECISIONS.md); a node that says, says a boolean.
        coinbase: x.coinbase === undefined ? false : expectBoolean(x.coinbase, 'scantxoutset.coinbase'),
      };
    });
  }
}
