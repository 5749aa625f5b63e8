// The RPC calls a chain watcher makes, with Core's argument handling
// (positional or named, count check, type check) and Core's result and error
// shapes. Sources: rpc/blockchain.cpp, rpc/mempool.cpp, rpc/rawtransaction.cpp,
// rpc/net.cpp, rpc/server.cpp, zmq/zmqrpc.cpp.
import type { Clock } from '../../../src/clock.ts';
import type { BlockRecord, Chain, Coin } from './chain.ts';
import { REGTEST_BITS, toHex } from './consensus.ts';
import { inferDescriptor, scanObjectScript } from './descriptor.ts';
import type { MempoolEntry, Mempool } from './mempool.ts';
import {
  RPC_INVALID_ADDRESS_OR_KEY,
  RPC_INVALID_PARAMETER,
  RPC_IN_WARMUP,
  RPC_METHOD_NOT_FOUND,
  RPC_MISC_ERROR,
  RPC_TYPE_ERROR,
  RpcError,
  jsonTypeName,
  typeMismatch,
} from './rpc-error.ts';
import { btcAmount, txJson, wtxid } from './tx-json.ts';

/** What the RPC layer reads from the node. */
export interface NodeState {
  readonly chain: Chain;
  readonly mempool: Mempool;
  readonly clock: Clock;
  readonly startedAtMs: number;
  readonly txindex: boolean;
  readonly version: number;
  readonly subversion: string;
  ibd: boolean;
  pruneMode: boolean;
  /** When set, every call answers -28 with this text, as bitcoind does while starting. */
  warmup: string | null;
  zmqNotifications(): Array<{ type: string; address: string; hwm: number }>;
}

type ParamType = 'string' | 'number' | 'boolean' | 'array' | 'any';

interface ParamSpec {
  /** Core's m_names, e.g. "verbosity|verbose". */
  names: string;
  type: ParamType;
  optional?: boolean;
}

interface MethodSpec {
  params: ParamSpec[];
  run(args: unknown[], node: NodeState): unknown;
}

// Regtest's pow limit as a target, and GetDifficulty(0x207fffff).
const TARGET_HEX = '7fffff0000000000000000000000000000000000000000000000000000000000';
const DIFFICULTY = 4.656542373906925e-10;
const GENESIS_COINBASE_TXID = '4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b';
// NODE_NETWORK | NODE_WITNESS | NODE_NETWORK_LIMITED | NODE_P2P_V2; pruned nodes drop NODE_NETWORK.
const SERVICES_FULL = 0xc09;
const SERVICES_PRUNED = 0xc08;

const METHODS: Record<string, MethodSpec> = {
  getblockchaininfo: { params: [], run: (_, node) => blockchainInfo(node) },
  getblockcount: { params: [], run: (_, node) => node.chain.height },
  getbestblockhash: { params: [], run: (_, node) => node.chain.tip.hash },
  getblockhash: {
    params: [{ names: 'height', type: 'number' }],
    run: ([height], node) => {
      const h = toInt(height);
      const record = h >= 0 ? node.chain.atHeight(h) : undefined;
      if (!record) throw new RpcError(RPC_INVALID_PARAMETER, 'Block height out of range');
      return record.hash;
    },
  },
  getblockheader: {
    params: [
      { names: 'blockhash', type: 'string' },
      { names: 'verbose', type: 'boolean', optional: true },
    ],
    run: ([hash, verbose], node) => {
      const record = findBlock(node, parseHash(hash, 'hash'));
      return verbose === false ? record.block.toHex(true) : headerJson(node, record);
    },
  },
  getblock: {
    params: [
      { names: 'blockhash', type: 'string' },
      { names: 'verbosity|verbose', type: 'any', optional: true },
    ],
    run: ([hash, verbosityArg], node) => {
      const blockhash = parseHash(hash, 'blockhash');
      const verbosity = parseVerbosity(verbosityArg, 1);
      const record = findBlock(node, blockhash);
      if (record.pruned) throw new RpcError(RPC_MISC_ERROR, 'Block not available (pruned data)');
      if (verbosity <= 0) return toHex(record.raw);
      return blockJson(node, record, verbosity);
    },
  },
  getrawmempool: {
    params: [
      { names: 'verbose', type: 'boolean', optional: true },
      { names: 'mempool_sequence', type: 'boolean', optional: true },
    ],
    run: ([verbose, withSequence], node) => {
      if (verbose === true) {
        if (withSequence === true) throw new RpcError(RPC_INVALID_PARAMETER, 'Verbose results cannot contain mempool sequence values.');
        return Object.fromEntries(node.mempool.entries().map((e) => [e.txid, mempoolEntryJson(node.mempool, e)]));
      }
      const txids = node.mempool.entries().map((e) => e.txid);
      return withSequence === true ? { txids, mempool_sequence: Number(node.mempool.sequence) } : txids;
    },
  },
  getmempoolentry: {
    params: [{ names: 'txid', type: 'string' }],
    run: ([txid], node) => {
      const entry = node.mempool.get(parseHash(txid, 'txid'));
      if (!entry) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Transaction not in mempool');
      return mempoolEntryJson(node.mempool, entry);
    },
  },
  // Core 24-29's shape (newer ones add an options object Till does not send): mempool spenders only.
  gettxspendingprevout: {
    params: [{ names: 'outputs', type: 'array' }],
    run: ([outputs], node) => txSpendingPrevout(node, outputs as unknown[]),
  },
  getrawtransaction: {
    params: [
      { names: 'txid', type: 'string' },
      { names: 'verbosity|verbose', type: 'any', optional: true },
      { names: 'blockhash', type: 'string', optional: true },
    ],
    run: ([txid, verbosity, blockhash], node) => rawTransaction(node, txid, verbosity, blockhash),
  },
  getzmqnotifications: { params: [], run: (_, node) => node.zmqNotifications() },
  scantxoutset: {
    params: [
      { names: 'action', type: 'string' },
      { names: 'scanobjects', type: 'array', optional: true },
    ],
    run: ([action, scanobjects], node) => scanTxOutSet(node, action as string, scanobjects as unknown[] | undefined),
  },
  uptime: { params: [], run: (_, node) => Math.floor((node.clock.now() - node.startedAtMs) / 1000) },
  getnetworkinfo: { params: [], run: (_, node) => networkInfo(node) },
};

function txSpendingPrevout(node: NodeState, outputs: unknown[]): Array<Record<string, unknown>> {
  if (outputs.length === 0) throw new RpcError(RPC_INVALID_PARAMETER, 'Invalid parameter, outputs are missing');
  return outputs.map((o) => {
    if (jsonTypeName(o) !== 'object') throw typeMismatch(o, 'object');
    const { txid, vout } = checkObject(o as Record<string, unknown>, { txid: 'string', vout: 'number' });
    const n = toInt(vout);
    if (n < 0) throw new RpcError(RPC_INVALID_PARAMETER, 'Invalid parameter, vout cannot be negative');
    const spender = node.mempool.spenderOf(parseHash(txid, 'txid'), n);
    return spender ? { txid, vout, spendingtxid: spender } : { txid, vout };
  });
}

/** RPCTypeCheckObj, strict and without nulls: every key present with its type, no other key. */
function checkObject(o: Record<string, unknown>, expected: Record<string, string>): Record<string, unknown> {
  for (const [key, type] of Object.entries(expected).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (o[key] === undefined || o[key] === null) throw new RpcError(RPC_TYPE_ERROR, `Missing ${key}`);
    if (jsonTypeName(o[key]) !== type) throw new RpcError(RPC_TYPE_ERROR, `JSON value of type ${jsonTypeName(o[key])} for field ${key} is not of expected type ${type}`);
  }
  const extra = Object.keys(o).find((k) => !Object.hasOwn(expected, k));
  if (extra !== undefined) throw new RpcError(RPC_TYPE_ERROR, `Unexpected key ${extra}`);
  return o;
}

/** Runs one call as CRPCTable::execute does; throws RpcError. */
export function dispatchRpc(node: NodeState, method: string, params: unknown[] | Record<string, unknown>): unknown {
  if (node.warmup !== null) throw new RpcError(RPC_IN_WARMUP, node.warmup);
  const spec = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
  if (!spec) throw new RpcError(RPC_METHOD_NOT_FOUND, 'Method not found');
  const args = Array.isArray(params) ? params : namedToPositional(spec, params);
  const required = spec.params.filter((p) => !p.optional).length;
  if (args.length < required || args.length > spec.params.length) throw new RpcError(RPC_MISC_ERROR, usage(method, spec));
  const mismatches: Record<string, string> = {};
  spec.params.forEach((p, i) => {
    const value = args[i];
    if (p.type === 'any' || (p.optional && (value === undefined || value === null))) return;
    const actual = jsonTypeName(value);
    const expected = p.type === 'boolean' ? 'bool' : p.type;
    if (actual !== expected) mismatches[`Position ${i + 1} (${p.names})`] = `JSON value of type ${actual} is not of expected type ${expected}`;
  });
  if (Object.keys(mismatches).length > 0) throw new RpcError(RPC_TYPE_ERROR, `Wrong type passed:\n${JSON.stringify(mismatches, null, 4)}`);
  return spec.run(args, node);
}

/** transformNamedArguments: names (or aliases) to positions; holes become null, trailing ones are dropped. */
function namedToPositional(spec: MethodSpec, named: Record<string, unknown>): unknown[] {
  const remaining = new Map(Object.entries(named));
  const out: unknown[] = [];
  let hole = 0;
  for (const p of spec.params) {
    const name = p.names.split('|').find((n) => remaining.has(n));
    if (name === undefined) {
      hole++;
      continue;
    }
    for (; hole > 0; hole--) out.push(null);
    out.push(remaining.get(name));
    remaining.delete(name);
  }
  const unknown = remaining.keys().next();
  if (!unknown.done) throw new RpcError(RPC_INVALID_PARAMETER, `Unknown named parameter ${unknown.value}`);
  return out;
}

/** The first line of Core's help text, which is what a wrong argument count answers with (the fake stops there). */
function usage(method: string, spec: MethodSpec): string {
  const show = (p: ParamSpec): string => {
    const name = p.names.split('|')[0]!;
    return p.type === 'string' ? `"${name}"` : p.type === 'array' ? `[${name},...]` : name;
  };
  const required = spec.params.filter((p) => !p.optional).map(show);
  const optional = spec.params.filter((p) => p.optional).map(show);
  return [method, ...required, ...(optional.length > 0 ? [`( ${optional.join(' ')} )`] : [])].join(' ');
}

function toInt(value: unknown): number {
  if (typeof value !== 'number') throw typeMismatch(value, 'number');
  if (!Number.isSafeInteger(value)) throw new RpcError(RPC_MISC_ERROR, 'JSON integer out of range');
  return value;
}

function parseVerbosity(value: unknown, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'boolean') return value ? 1 : 0;
  return toInt(value);
}

/** ParseHashV with Core's messages. */
function parseHash(value: unknown, name: string): string {
  if (typeof value !== 'string') throw typeMismatch(value, 'string');
  if (value.length !== 64) throw new RpcError(RPC_INVALID_PARAMETER, `${name} must be of length 64 (not ${value.length}, for '${value}')`);
  if (!/^[0-9a-fA-F]{64}$/.test(value)) throw new RpcError(RPC_INVALID_PARAMETER, `${name} must be hexadecimal string (not '${value}')`);
  return value.toLowerCase();
}

function findBlock(node: NodeState, hash: string): BlockRecord {
  const record = node.chain.byHash(hash);
  if (!record) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Block not found');
  return record;
}

function chainworkHex(record: BlockRecord): string {
  return record.chainwork.toString(16).padStart(64, '0');
}

function blockchainInfo(node: NodeState): Record<string, unknown> {
  const { chain } = node;
  const tip = chain.tip;
  const info: Record<string, unknown> = {
    chain: 'regtest',
    blocks: chain.height,
    headers: chain.height,
    bestblockhash: tip.hash,
    bits: REGTEST_BITS.toString(16).padStart(8, '0'),
    target: TARGET_HEX,
    difficulty: DIFFICULTY,
    time: tip.block.timestamp,
    mediantime: chain.medianTimePast(tip),
    // A node in IBD has not caught up; the exact fraction is the fake's choice.
    verificationprogress: node.ibd ? 0.5 : 1,
    initialblockdownload: node.ibd,
    chainwork: chainworkHex(tip),
    size_on_disk: [...chain.allBlocks()].reduce((sum, r) => sum + (r.pruned ? 0 : r.raw.length), 0),
    pruned: node.pruneMode,
  };
  if (node.pruneMode) {
    let firstUnpruned = 0;
    for (let h = 1; h <= chain.height; h++) if (chain.atHeight(h)!.pruned) firstUnpruned = h + 1;
    info.pruneheight = firstUnpruned;
    info.automatic_pruning = false;
  }
  info.warnings = [];
  return info;
}

function headerJson(node: NodeState, record: BlockRecord): Record<string, unknown> {
  const { chain } = node;
  const active = chain.isActive(record);
  const next = active ? chain.atHeight(record.height + 1) : undefined;
  const json: Record<string, unknown> = {
    hash: record.hash,
    confirmations: active ? chain.height - record.height + 1 : -1,
    height: record.height,
    version: record.block.version,
    versionHex: (record.block.version >>> 0).toString(16).padStart(8, '0'),
    merkleroot: toHex(Uint8Array.from(record.block.merkleRoot!).reverse()),
    time: record.block.timestamp,
    mediantime: chain.medianTimePast(record),
    nonce: record.block.nonce,
    bits: record.block.bits.toString(16).padStart(8, '0'),
    target: TARGET_HEX,
    difficulty: DIFFICULTY,
    chainwork: chainworkHex(record),
    nTx: record.txs.length,
  };
  if (record.prev) json.previousblockhash = record.prev.hash;
  if (next) json.nextblockhash = next.hash;
  return json;
}

function blockJson(node: NodeState, record: BlockRecord, verbosity: number): Record<string, unknown> {
  const { block } = record;
  const coinbase = record.txs[0]!;
  const coinbaseInput = coinbase.ins[0]!;
  const coinbaseTx: Record<string, unknown> = {
    version: coinbase.version,
    locktime: coinbase.locktime,
    sequence: coinbaseInput.sequence,
    coinbase: toHex(coinbaseInput.script),
  };
  if (coinbaseInput.witness.length > 0) coinbaseTx.witness = toHex(coinbaseInput.witness[0]!);
  return {
    ...headerJson(node, record),
    strippedsize: block.byteLength(false, false),
    size: block.byteLength(false, true),
    weight: block.weight(),
    coinbase_tx: coinbaseTx,
    tx:
      verbosity === 1
        ? record.txids
        : record.txs.map((tx, i) => txJson(tx, { undo: i > 0 ? record.undo?.[i - 1] : undefined, prevouts: verbosity >= 3 })),
  };
}

function mempoolEntryJson(mempool: Mempool, entry: MempoolEntry): Record<string, unknown> {
  const sum = (ids: string[]): { count: number; vsize: number; fee: bigint } =>
    ids.reduce(
      (acc, id) => {
        const e = mempool.get(id)!;
        return { count: acc.count + 1, vsize: acc.vsize + e.tx.virtualSize(), fee: acc.fee + e.fee };
      },
      { count: 0, vsize: 0, fee: 0n },
    );
  const ancestors = sum(mempool.withAncestors(entry.txid));
  const descendants = sum(mempool.withDescendants(entry.txid));
  const vsize = entry.tx.virtualSize();
  return {
    vsize_adjusted: vsize,
    vsize,
    vsize_bip141: vsize,
    weight: entry.tx.weight(),
    time: Math.floor(entry.timeMs / 1000),
    height: entry.height,
    descendantcount: descendants.count,
    descendantsize: descendants.vsize,
    ancestorcount: ancestors.count,
    ancestorsize: ancestors.vsize,
    wtxid: wtxid(entry.tx),
    // The fake treats every transaction as its own chunk (exact for lone transactions).
    chunkweight: entry.tx.weight(),
    fees: {
      base: btcAmount(entry.fee),
      modified: btcAmount(entry.fee),
      ancestor: btcAmount(ancestors.fee),
      descendant: btcAmount(descendants.fee),
      chunk: btcAmount(entry.fee),
    },
    depends: mempool.parents(entry.txid),
    spentby: mempool.children(entry.txid).sort(),
    // Payments reach the fake "from the network", so none are waiting for their first broadcast.
    unbroadcast: false,
  };
}

function rawTransaction(node: NodeState, txidArg: unknown, verbosityArg: unknown, blockhashArg: unknown): unknown {
  const txid = parseHash(txidArg, 'parameter 1');
  if (txid === GENESIS_COINBASE_TXID) {
    throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'The genesis block coinbase is not considered an ordinary transaction and cannot be retrieved');
  }
  const verbosity = parseVerbosity(verbosityArg, 0);
  const byBlockhash = blockhashArg !== undefined && blockhashArg !== null;
  let record: BlockRecord | undefined;
  if (byBlockhash) {
    record = node.chain.byHash(parseHash(blockhashArg, 'parameter 3'));
    if (!record) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Block hash not found');
  }

  let index = -1;
  let entry: MempoolEntry | undefined;
  if (record) {
    if (record.pruned) throw new RpcError(RPC_MISC_ERROR, 'Block not available');
    index = record.txids.indexOf(txid);
  } else {
    entry = node.mempool.get(txid);
    if (!entry && node.txindex) {
      record = node.chain.blockOfTx(txid);
      index = record ? record.txids.indexOf(txid) : -1;
    }
  }
  const tx = entry?.tx ?? (record && index >= 0 ? record.txs[index] : undefined);
  if (!tx) {
    const reason = byBlockhash
      ? 'No such transaction found in the provided block'
      : node.txindex
        ? 'No such mempool or blockchain transaction'
        : 'No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries';
    throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, `${reason}. Use gettransaction for wallet transactions.`);
  }
  if (verbosity <= 0) return tx.toHex();

  const result: Record<string, unknown> = {};
  if (byBlockhash && record) result.in_active_chain = node.chain.isActive(record);
  if (entry) result.vsize_adjusted = tx.virtualSize();
  const inBlock = !entry && record && index >= 0 ? record : undefined;
  const undo: Coin[] | undefined = verbosity >= 2 && inBlock && index > 0 ? inBlock.undo?.[index - 1] : undefined;
  Object.assign(result, txJson(tx, { undo, prevouts: true }));
  if (inBlock) {
    result.blockhash = inBlock.hash;
    if (node.chain.isActive(inBlock)) {
      result.confirmations = node.chain.height - inBlock.height + 1;
      result.time = inBlock.block.timestamp;
      result.blocktime = inBlock.block.timestamp;
    } else {
      result.confirmations = 0;
    }
  }
  return result;
}

function scanTxOutSet(node: NodeState, action: string, scanobjects: unknown[] | undefined): unknown {
  if (action === 'status') return null; // no scan in progress: scans here finish at once
  if (action === 'abort') return false;
  if (action !== 'start') throw new RpcError(RPC_INVALID_PARAMETER, `Invalid action '${action}'`);
  if (!scanobjects) throw new RpcError(RPC_MISC_ERROR, 'scanobjects argument is required for the start action');
  const needles = new Set(scanobjects.map((o) => toHex(scanObjectScript(o))));
  const { chain } = node;
  let txouts = 0;
  const found: Coin[] = [];
  for (const coin of chain.coins()) {
    txouts++;
    if (needles.has(toHex(coin.script))) found.push(coin);
  }
  // Core walks a std::map<COutPoint, Coin>: txid in internal (reversed) byte order, then vout.
  found.sort((a, b) => Buffer.compare(Buffer.from(a.txid, 'hex').reverse(), Buffer.from(b.txid, 'hex').reverse()) || a.vout - b.vout);
  return {
    success: true,
    txouts,
    height: chain.height,
    bestblock: chain.tip.hash,
    unspents: found.map((coin) => ({
      txid: coin.txid,
      vout: coin.vout,
      scriptPubKey: toHex(coin.script),
      desc: inferDescriptor(coin.script),
      amount: btcAmount(coin.value),
      coinbase: coin.coinbase,
      height: coin.height,
      blockhash: chain.atHeight(coin.height)!.hash,
      confirmations: chain.height - coin.height + 1,
    })),
    total_amount: btcAmount(found.reduce((sum, c) => sum + c.value, 0n)),
  };
}

function networkInfo(node: NodeState): Record<string, unknown> {
  const services = node.pruneMode ? SERVICES_PRUNED : SERVICES_FULL;
  const serviceNames = [
    [0x1, 'NETWORK'],
    [0x8, 'WITNESS'],
    [0x400, 'NETWORK_LIMITED'],
    [0x800, 'P2P_V2'],
  ] as const;
  return {
    version: node.version,
    subversion: node.subversion,
    protocolversion: 70017,
    localservices: services.toString(16).padStart(16, '0'),
    localservicesnames: serviceNames.filter(([bit]) => services & bit).map(([, name]) => name),
    localrelay: true,
    timeoffset: 0,
    networkactive: true,
    connections: 0,
    connections_in: 0,
    connections_out: 0,
    // Without -proxy/-onion/-i2psam only IPv4 and IPv6 are reachable.
    networks: ['ipv4', 'ipv6', 'onion', 'i2p', 'cjdns'].map((name) => ({
      name,
      limited: !name.startsWith('ipv'),
      reachable: name.startsWith('ipv'),
      proxy: '',
      proxy_randomize_credentials: false,
    })),
    relayfee: btcAmount(100n),
    incrementalfee: btcAmount(100n),
    localaddresses: [],
    warnings: [],
  };
}

