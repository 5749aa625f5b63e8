// The fake node: chain, mempool and wallet state, the test controls, and the
// ZMQ notifications each change produces, in the order Bitcoin Core's
// validation interface emits them (see docs/FAKE_BITCOIND.md).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as bitcoin from 'bitcoinjs-lib';
import { systemClock, type Clock } from '../../../src/clock.ts';
import { Chain, inputTxid, type BlockRecord, type Coin } from './chain.ts';
import { COINBASE_MATURITY, buildBlock, buildGenesisBlock } from './consensus.ts';
import { Mempool } from './mempool.ts';
import { dispatchRpc, type NodeState } from './rpc-methods.ts';
import { RpcServer } from './rpc-server.ts';
import { Wallet, addressToScript, dustThreshold, signalsRbf, type BuiltTx, type TxOutputSpec } from './wallet.ts';
import { ZMQ_TOPICS, ZmqPublisher, type ZmqDropPredicate, type ZmqTopic } from './zmq-publisher.ts';

export interface FakeBitcoindOptions {
  /** Block times, mempool entry times and uptime come from here. Default: the system clock. */
  clock?: Clock;
  /** Blocks mined to the wallet before start (coinbases mature after 100). Default 150. */
  initialBlocks?: number;
  /** Fee rate of the wallet's payments in sat/vB (integer). Default 2. */
  feeRate?: number;
  /** Answer getrawtransaction for confirmed transactions without a block hash, like -txindex. Default false (Core's default). */
  txindex?: boolean;
  /** Enabled ZMQ notifications (-zmqpubX). Default: all five. */
  zmqTopics?: ZmqTopic[];
  /** -zmqpubXhwm. Default 1000. */
  zmqHwm?: number;
  /** The -rpcauth user. Default "till". */
  rpcUser?: string;
  /** Its password. Default: random. */
  rpcPassword?: string;
  /** Where regtest/.cookie is written. Default: a fresh temporary directory, removed by stop(). */
  dataDir?: string;
  /** Seed of the wallet key (any string), for stable wallet addresses. */
  walletSeed?: string;
  /** getnetworkinfo's version / subversion. */
  version?: number;
  subversion?: string;
}

export interface PaymentSpec {
  address: string;
  /** Integer satoshis. */
  sats: number | bigint;
}

export interface PayOptions {
  /** Signal BIP125 replaceability (nSequence 0xfffffffd). Default true, as Core's wallet. */
  rbf?: boolean;
}

export interface MineOptions {
  /** Mempool transactions for the first block: 'all' (default) or these txids (their unconfirmed parents too). */
  include?: 'all' | string[];
  /** Address the coinbases pay (generatetoaddress's address). Default: the wallet's. */
  to?: string;
}

export interface ReplaceOptions {
  /** Outputs of the replacement besides change. Default: the original's. [] sends everything back to the wallet. */
  outputs?: PaymentSpec[];
}

export interface ReorgOptions {
  /** Transactions of the disconnected blocks that the new branch double-spends (they and their descendants vanish). */
  dropTxids?: string[];
  /** Transactions of the disconnected blocks that the new branch leaves out (they return to the mempool). */
  leaveInMempool?: string[];
}

export interface ReorgResult {
  /** Disconnected block hashes, old tip first. */
  disconnected: string[];
  /** Connected block hashes, in height order. */
  connected: string[];
}

const MAX_BLOCKS_PER_CALL = 1000;

export class FakeBitcoind {
  readonly rpcUser: string;
  readonly rpcPassword: string;
  readonly cookieFile: string;
  readonly #cookiePassword: string;
  readonly #dataDir: string;
  readonly #ownsDataDir: boolean;
  readonly #clock: Clock;
  readonly #feeRate: bigint;
  readonly #chain: Chain;
  readonly #mempool = new Mempool();
  readonly #wallet: Wallet;
  /** Transactions the wallet made, by txid: what replace() and reorg drops need to rebuild them. */
  readonly #walletTxs = new Map<string, BuiltTx>();
  readonly #zmq: ZmqPublisher;
  readonly #rpc: RpcServer;
  readonly #state: NodeState;
  /** Competing branches made by reorg(), numbering their coinbases' extra nonce. */
  #branches = 0;
  /** Blocks fallBehind() took off the best chain, lowest first. */
  readonly #behind: BlockRecord[] = [];

  private constructor(opts: FakeBitcoindOptions) {
    this.#clock = opts.clock ?? systemClock;
    this.#feeRate = BigInt(positiveInt(opts.feeRate ?? 2, 'feeRate'));
    this.#chain = new Chain(buildGenesisBlock());
    this.#wallet = new Wallet(opts.walletSeed ?? 'till fake bitcoind wallet');
    this.#zmq = new ZmqPublisher(opts.zmqTopics ?? [...ZMQ_TOPICS], positiveInt(opts.zmqHwm ?? 1000, 'zmqHwm'));
    this.rpcUser = opts.rpcUser ?? 'till';
    this.rpcPassword = opts.rpcPassword ?? randomBytes(16).toString('hex');
    this.#cookiePassword = randomBytes(32).toString('hex');
    this.#ownsDataDir = opts.dataDir === undefined;
    this.#dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'fake-bitcoind-'));
    this.cookieFile = join(this.#dataDir, 'regtest', '.cookie');
    const zmq = this.#zmq;
    this.#state = {
      chain: this.#chain,
      mempool: this.#mempool,
      clock: this.#clock,
      startedAtMs: this.#clock.now(),
      txindex: opts.txindex ?? false,
      version: opts.version ?? 319900,
      subversion: opts.subversion ?? '/Satoshi:31.99.0/',
      ibd: false,
      pruneMode: false,
      warmup: null,
      zmqNotifications: () => zmq.topics.map((t) => ({ type: `pub${t}`, address: zmq.endpoint, hwm: zmq.hwm })),
    };
    this.#rpc = new RpcServer(
      (method, params) => dispatchRpc(this.#state, method, params),
      (user, password) =>
        (user === this.rpcUser && password === this.rpcPassword) || (user === '__cookie__' && password === this.#cookiePassword),
    );
    // The chain a restarted node would load from disk: nothing is published for it.
    const initialBlocks = nonNegativeInt(opts.initialBlocks ?? 150, 'initialBlocks');
    for (let i = 0; i < initialBlocks; i++) this.#connectNewBlock([], 0n);
  }

  static async start(opts: FakeBitcoindOptions = {}): Promise<FakeBitcoind> {
    const node = new FakeBitcoind(opts);
    try {
      node.#writeCookie();
      await node.#zmq.start();
      await node.#rpc.start();
    } catch (err) {
      await node.stop();
      throw err;
    }
    return node;
  }

  get rpcUrl(): string {
    return `http://127.0.0.1:${this.#rpc.port}/`;
  }

  /** tcp://127.0.0.1:PORT, the address of every enabled topic. */
  get zmqEndpoint(): string {
    return this.#zmq.endpoint;
  }

  get tipHeight(): number {
    return this.#chain.height;
  }

  get tipHash(): string {
    return this.#chain.tip.hash;
  }

  /** The wallet's own P2WPKH address (coinbases and change). */
  get walletAddress(): string {
    return this.#wallet.address;
  }

  /** One payment; returns its txid. The payment is output 0, change (if any) comes last. */
  pay(address: string, sats: number | bigint, opts: PayOptions = {}): Promise<string> {
    return this.payMany([{ address, sats }], opts);
  }

  /** One transaction paying every output in order, plus change; returns its txid. */
  async payMany(payments: PaymentSpec[], opts: PayOptions = {}): Promise<string> {
    if (!Array.isArray(payments) || payments.length === 0) throw new TypeError('payMany needs at least one {address, sats}');
    const built = this.#wallet.fund(this.#spendableCoins(), {
      payments: payments.map(toOutputSpec),
      feeFor: (vsize) => BigInt(vsize) * this.#feeRate,
      rbf: opts.rbf ?? true,
      locktime: this.#chain.height,
    });
    this.#acceptToMempool(built);
    await this.#zmq.flush();
    return built.tx.getId();
  }

  /** Mines `n` blocks to the wallet or `to` (like generatetoaddress); mempool transactions go into the first. Returns the hashes. */
  async mine(n = 1, opts: MineOptions = {}): Promise<string[]> {
    const count = positiveInt(n, 'n', MAX_BLOCKS_PER_CALL);
    const coinbaseScript = opts.to === undefined ? this.#wallet.script : addressToScript(opts.to);
    const selected = this.#selectForBlock(opts.include ?? 'all');
    const hashes: string[] = [];
    for (let i = 0; i < count; i++) {
      const entries = i === 0 ? selected : [];
      const record = this.#connectNewBlock(
        entries.map((e) => e.tx),
        entries.reduce((sum, e) => sum + e.fee, 0n),
        undefined,
        coinbaseScript,
      );
      // Removal for block inclusion consumes mempool sequence numbers but is never published.
      for (const e of entries) this.#mempool.remove(e.txid);
      this.#publishBlockConnected(record);
      this.#publishTip(record);
      hashes.push(record.hash);
    }
    await this.#zmq.flush();
    return hashes;
  }

  /**
   * Mines one block holding a new wallet transaction that pays `payments`,
   * which never enters the mempool: a miner's own, or one sent to a miner
   * directly (Core: `generateblock` with a raw transaction). Consensus rules
   * only, so an output may be below dust, or 0. Returns the txid.
   */
  async mineTx(payments: Array<{ address: string; sats: number | bigint }>): Promise<string> {
    if (!Array.isArray(payments) || payments.length === 0) throw new TypeError('mineTx needs at least one {address, sats}');
    for (const { sats } of payments) {
      if (!(typeof sats === 'bigint' || Number.isSafeInteger(sats)) || sats < 0) throw new RangeError(`sats must be an integer of 0 or more, got ${String(sats)}`);
    }
    const built = this.#wallet.fund(this.#spendableCoins(), {
      payments: payments.map(({ address, sats }) => ({ script: addressToScript(address), value: BigInt(sats) })),
      feeFor: (vsize) => BigInt(vsize) * this.#feeRate,
      rbf: true,
      locktime: this.#chain.height,
    });
    const txid = built.tx.getId();
    this.#walletTxs.set(txid, built);
    const record = this.#connectNewBlock([built.tx], built.fee);
    this.#publishBlockConnected(record);
    this.#publishTip(record);
    await this.#zmq.flush();
    return txid;
  }

  /**
   * RBF: a transaction spending the same inputs with a higher fee replaces a
   * mempool transaction made by pay()/payMany(). Publishes `R` for the
   * original (and any descendants), then the replacement's hashtx, rawtx and `A`.
   */
  async replace(txid: string, opts: ReplaceOptions = {}): Promise<string> {
    const entry = this.#mempool.get(txid);
    if (!entry) throw new Error(`replace: ${txid} is not in the mempool`);
    const original = this.#walletTxs.get(txid);
    if (!original) throw new Error(`replace: ${txid} was not made by the fake's wallet`);
    const conflicts = this.#mempool.withDescendants(txid);
    const conflictFees = conflicts.reduce((sum, id) => sum + this.#mempool.get(id)!.fee, 0n);
    const built = this.#wallet.tryBuild(original.coins, {
      payments: opts.outputs ? opts.outputs.map(toOutputSpec) : original.payments,
      // BIP125 rules 3 and 4: pay for what is evicted plus the replacement's own relay.
      feeFor: (vsize) => conflictFees + BigInt(vsize) * this.#feeRate,
      rbf: signalsRbf(original.tx),
      locktime: this.#chain.height,
    });
    if (!built) throw new Error(`replace: the inputs of ${txid} cannot pay the outputs and a higher fee`);
    for (const id of conflicts) {
      this.#removeFromMempool(id);
      this.#walletTxs.delete(id);
    }
    this.#acceptToMempool(built);
    await this.#zmq.flush();
    return built.tx.getId();
  }

  /**
   * Disconnects `depth` blocks and connects `depth + 1` new ones, as when a
   * longer branch arrives. Each old transaction is confirmed again at the
   * same height unless dropped (double-spent there by a sweep to the wallet)
   * or left in the mempool.
   */
  async reorg(depth: number, opts: ReorgOptions = {}): Promise<ReorgResult> {
    const chain = this.#chain;
    // Deeper reorgs could orphan coinbases the wallet has spent.
    const d = positiveInt(depth, 'depth', Math.min(chain.height, COINBASE_MATURITY));
    const old: BlockRecord[] = [];
    for (let h = chain.height - d + 1; h <= chain.height; h++) old.push(chain.atHeight(h)!);
    if (old.some((r) => r.pruned)) throw new Error('reorg: cannot disconnect pruned blocks');
    const plan = this.#planReorg(old, opts);
    this.#branches++;

    const disconnected: BlockRecord[] = [];
    for (let i = 0; i < d; i++) {
      const record = chain.disconnectTip();
      disconnected.push(record);
      this.#publishBlockDisconnected(record);
    }
    const connected: BlockRecord[] = [];
    for (let i = 0; i <= d; i++) {
      const slot = plan.blocks[i] ?? { txs: [], fees: 0n };
      connected.push(this.#connectNewBlock(slot.txs, slot.fees, this.#branches));
    }
    for (const sweep of plan.sweeps) this.#walletTxs.set(sweep.tx.getId(), sweep);
    // MaybeUpdateMempoolForReorg runs before the BlockConnected notifications go out.
    for (const step of plan.mempoolSteps) {
      if (step.vanish) {
        this.#walletTxs.delete(step.txid);
        for (const id of this.#mempool.withDescendants(step.txid)) this.#removeFromMempool(id);
      } else {
        // Every non-coinbase transaction of the fake was made by its wallet.
        this.#acceptToMempool(this.#walletTxs.get(step.txid)!);
      }
    }
    for (const record of connected) this.#publishBlockConnected(record);
    this.#publishTip(chain.tip);
    await this.#zmq.flush();
    return { disconnected: disconnected.map((r) => r.hash), connected: connected.map((r) => r.hash) };
  }

  /**
   * A reorg back to a branch that left the best chain (its blocks stay known,
   * as Core keeps them): the active blocks above the fork are disconnected,
   * the stale branch up to `hash` is connected again, and one new block is
   * mined on it, so it has the most work (bitcoind: invalidateblock the other
   * branch, reconsiderblock this one, one more block). Only branches of blocks
   * that hold nothing but their coinbase: the mempool is left as it is.
   */
  async reorgBack(hash: string): Promise<void> {
    const chain = this.#chain;
    const target = chain.byHash(hash);
    if (!target) throw new Error(`reorgBack: unknown block ${hash}`);
    if (chain.isActive(target)) throw new Error(`reorgBack: ${hash} is on the best chain`);
    const branch: BlockRecord[] = [];
    let fork: BlockRecord | null = target;
    for (; fork && !chain.isActive(fork); fork = fork.prev) branch.unshift(fork);
    const leaving: BlockRecord[] = [];
    for (let h = chain.height; h > fork!.height; h--) leaving.push(chain.atHeight(h)!);
    if ([...branch, ...leaving].some((r) => r.txs.length > 1)) throw new Error('reorgBack: only branches of coinbase-only blocks');
    for (const _ of leaving) this.#publishBlockDisconnected(chain.disconnectTip());
    for (const record of branch) this.#publishBlockConnected(chain.connect(record.block));
    const height = fork!.height + leaving.length;
    while (chain.height <= height) this.#publishBlockConnected(this.#connectNewBlock([], 0n, ++this.#branches));
    this.#publishTip(chain.tip);
    await this.#zmq.flush();
  }

  /** Loses every ZMQ message for which `predicate` returns true; counters still advance. null stops dropping. */
  dropZmq(predicate: ZmqDropPredicate | null): void {
    this.#zmq.setDropPredicate(predicate);
  }

  /** Stops the RPC server: connections are refused until startRpc(). */
  stopRpc(): Promise<void> {
    return this.#rpc.stop();
  }

  /** Starts the RPC server again on the same port. */
  startRpc(): Promise<void> {
    return this.#rpc.start();
  }

  /** Closes the ZMQ socket; notifications meanwhile are lost but counted. */
  /**
   * A node restarted from an older state (a crash before it flushed, a
   * restored datadir): its best chain is `depth` blocks lower, with nothing
   * published; the blocks stay known as headers (as its peers tell it).
   * catchUp() connects them again.
   */
  fallBehind(depth: number): void {
    const d = positiveInt(depth, 'depth', Math.min(this.#chain.height, COINBASE_MATURITY));
    for (let i = 0; i < d; i++) this.#behind.unshift(this.#chain.disconnectTip());
  }

  /** Connects the blocks fallBehind() took off, each published as a node catching up does. */
  async catchUp(): Promise<void> {
    for (const record of this.#behind.splice(0)) {
      const again = this.#chain.connect(record.block);
      this.#publishBlockConnected(again);
      this.#publishTip(again);
    }
    await this.#zmq.flush();
  }

  /** Publishes over ZMQ a transaction the node does not hold (a forged rawtx, as anyone who binds the port could send). */
  publishUnheld(tx: bitcoin.Transaction): void {
    this.#publishTx(tx, tx.getId());
  }

  stopZmq(opts: { unlisted?: boolean } = {}): Promise<void> {
    return this.#zmq.stop(opts);
  }

  /** Binds ZMQ again on the same port; resetCounters models a bitcoind restart (counters from 0), `topics` one with other -zmqpub… options. */
  startZmq(opts: { resetCounters?: boolean; topics?: readonly ZmqTopic[] } = {}): Promise<void> {
    return this.#zmq.start(opts);
  }

  /** Initial block download: getblockchaininfo says so, and hashblock/rawblock are not published. */
  setIbd(on: boolean): void {
    this.#state.ibd = on;
  }

  /** While set, every RPC answers -28 with this message (bitcoind starting up). null ends warmup. */
  setWarmup(message: string | null): void {
    this.#state.warmup = message;
  }

  /** Prune mode: blocks below `height` lose their data (getblock answers -1 "Block not available (pruned data)"). */
  pruneBelow(height: number): void {
    if (this.#state.txindex) throw new Error('pruneBelow: prune mode is incompatible with -txindex');
    const h = positiveInt(height, 'height', this.#chain.height);
    this.#state.pruneMode = true;
    for (const record of this.#chain.allBlocks()) if (record.height < h) record.pruned = true;
  }

  /** Resolves once a ZMQ subscriber covers `topics` (default: all enabled), so nothing published afterwards is lost to the slow-joiner effect. */
  waitForSubscriber(topics?: ZmqTopic[], timeoutMs?: number): Promise<void> {
    return this.#zmq.waitForSubscriber(topics, timeoutMs);
  }

  async stop(): Promise<void> {
    await this.#rpc.stop();
    await this.#zmq.stop();
    rmSync(this.cookieFile, { force: true });
    if (this.#ownsDataDir) rmSync(this.#dataDir, { recursive: true, force: true });
  }

  /** Like GenerateAuthCookie: `__cookie__:<64 hex>`, written to a temporary file and renamed, owner-only. */
  #writeCookie(): void {
    mkdirSync(join(this.#dataDir, 'regtest'), { recursive: true });
    const tmp = `${this.cookieFile}.tmp`;
    writeFileSync(tmp, `__cookie__:${this.#cookiePassword}`, { mode: 0o600 });
    renameSync(tmp, this.cookieFile);
  }

  /** Mature wallet coins that no mempool transaction spends (the fake's wallet spends confirmed coins only). */
  #spendableCoins(): Coin[] {
    const height = this.#chain.height;
    return [...this.#chain.coins()].filter(
      (c) =>
        this.#wallet.isMine(c.script) &&
        !this.#mempool.spenderOf(c.txid, c.vout) &&
        (!c.coinbase || height - c.height >= COINBASE_MATURITY),
    );
  }

  #selectForBlock(include: 'all' | string[]): ReturnType<Mempool['entries']> {
    if (include === 'all') return this.#mempool.entries();
    if (!Array.isArray(include)) throw new TypeError("mine: include must be 'all' or an array of txids");
    const wanted = new Set(include);
    for (const txid of wanted) {
      if (!this.#mempool.has(txid)) throw new Error(`mine: ${txid} is not in the mempool`);
      const missing = this.#mempool.withAncestors(txid).find((id) => !wanted.has(id));
      if (missing) throw new Error(`mine: ${txid} needs its unconfirmed parent ${missing} in the same block`);
    }
    return this.#mempool.entries().filter((e) => wanted.has(e.txid));
  }

  /** `extraNonce` tells a competing branch's blocks apart from the ones they replace. */
  #connectNewBlock(txs: bitcoin.Transaction[], fees: bigint, extraNonce?: number, coinbaseScript = this.#wallet.script): BlockRecord {
    const tip = this.#chain.tip;
    const block = buildBlock({
      prevHash: tip.hash,
      height: tip.height + 1,
      // UpdateTime: never at or below the median time past.
      time: Math.max(this.#chain.medianTimePast(tip) + 1, Math.floor(this.#clock.now() / 1000)),
      coinbaseScript,
      fees,
      txs,
      extraNonce,
    });
    return this.#chain.connect(block);
  }

  /**
   * Sorts the disconnected blocks' transactions: vanished (dropped, or
   * spending a vanished one), back to the mempool (left out, or spending one
   * left out), or confirmed again in the new block of the same height (so
   * its nLockTime stays valid). Validates everything before anything changes.
   */
  #planReorg(old: BlockRecord[], opts: ReorgOptions) {
    const drop = new Set(opts.dropTxids ?? []);
    const leave = new Set(opts.leaveInMempool ?? []);
    const known = new Set(old.flatMap((r) => r.txids.slice(1)));
    for (const txid of [...drop, ...leave]) {
      if (!known.has(txid)) throw new Error(`reorg: ${txid} is not a non-coinbase transaction of the disconnected blocks`);
      if (drop.has(txid) && leave.has(txid)) throw new Error(`reorg: ${txid} cannot be both dropped and left in the mempool`);
    }
    const vanished = new Set<string>();
    const toMempool = new Set<string>();
    const blocks: Array<{ txs: bitcoin.Transaction[]; fees: bigint }> = [];
    const sweeps: BuiltTx[] = [];
    const mempoolSteps: Array<{ txid: string; vanish: boolean }> = [];
    for (const record of old) {
      const slot = { txs: [] as bitcoin.Transaction[], fees: 0n };
      blocks.push(slot);
      record.txs.forEach((tx, i) => {
        if (i === 0) return;
        const txid = record.txids[i]!;
        const parents = tx.ins.map(inputTxid);
        if (parents.some((p) => vanished.has(p))) {
          // Gone with its parent: no double spend needed.
          vanished.add(txid);
          mempoolSteps.push({ txid, vanish: true });
        } else if (drop.has(txid)) {
          if (parents.some((p) => toMempool.has(p))) throw new Error(`reorg: cannot drop ${txid}: its parent stays unconfirmed`);
          const made = this.#walletTxs.get(txid);
          if (!made) throw new Error(`reorg: ${txid} was not made by the fake's wallet, so it cannot be double-spent`);
          const sweep = this.#wallet.tryBuild(made.coins, {
            payments: [],
            feeFor: (vsize) => BigInt(vsize) * this.#feeRate,
            rbf: false,
            locktime: record.height - 1,
          });
          if (!sweep) throw new Error(`reorg: the inputs of ${txid} are too small to double-spend`);
          vanished.add(txid);
          mempoolSteps.push({ txid, vanish: true });
          sweeps.push(sweep);
          slot.txs.push(sweep.tx);
          slot.fees += sweep.fee;
        } else if (leave.has(txid) || parents.some((p) => toMempool.has(p))) {
          toMempool.add(txid);
          mempoolSteps.push({ txid, vanish: false });
        } else {
          slot.txs.push(tx);
          slot.fees += sumCoins(record.undo![i - 1]!) - sumOutputs(tx);
        }
      });
    }
    return { blocks, sweeps, mempoolSteps };
  }

  #acceptToMempool(built: BuiltTx): void {
    const txid = built.tx.getId();
    if (built.coins.length > 0) this.#walletTxs.set(txid, built);
    const sequence = this.#mempool.add({ tx: built.tx, txid, fee: built.fee, timeMs: this.#clock.now(), height: this.#chain.height });
    this.#publishTx(built.tx, txid);
    this.#zmq.publish('sequence', sequenceBody(txid, 'A', sequence));
  }

  #removeFromMempool(txid: string): void {
    const sequence = this.#mempool.remove(txid);
    this.#zmq.publish('sequence', sequenceBody(txid, 'R', sequence));
  }

  #publishTx(tx: bitcoin.Transaction, txid: string): void {
    this.#zmq.publish('hashtx', Buffer.from(txid, 'hex'));
    this.#zmq.publish('rawtx', tx.toBuffer());
  }

  #publishBlockConnected(record: BlockRecord): void {
    record.txs.forEach((tx, i) => this.#publishTx(tx, record.txids[i]!));
    this.#zmq.publish('sequence', sequenceBody(record.hash, 'C'));
  }

  #publishBlockDisconnected(record: BlockRecord): void {
    record.txs.forEach((tx, i) => this.#publishTx(tx, record.txids[i]!));
    this.#zmq.publish('sequence', sequenceBody(record.hash, 'D'));
  }

  /** UpdatedBlockTip: hashblock and rawblock for the new tip only, and never during IBD. */
  #publishTip(record: BlockRecord): void {
    if (this.#state.ibd) return;
    this.#zmq.publish('hashblock', Buffer.from(record.hash, 'hex'));
    this.#zmq.publish('rawblock', record.raw);
  }
}

/** `sequence` body: 32-byte hash in RPC order, label, and for A/R the 8-byte LE mempool sequence. */
function sequenceBody(hash: string, label: 'A' | 'R' | 'C' | 'D', mempoolSequence?: bigint): Uint8Array {
  const body = Buffer.alloc(mempoolSequence === undefined ? 33 : 41);
  Buffer.from(hash, 'hex').copy(body, 0);
  body[32] = label.charCodeAt(0);
  if (mempoolSequence !== undefined) body.writeBigUInt64LE(mempoolSequence, 33);
  return body;
}

function toOutputSpec(payment: PaymentSpec): TxOutputSpec {
  if (typeof payment !== 'object' || payment === null) throw new TypeError('a payment is {address, sats}');
  const script = addressToScript(payment.address);
  const { sats } = payment;
  if (!(typeof sats === 'bigint' || (typeof sats === 'number' && Number.isSafeInteger(sats))) || sats <= 0) {
    throw new RangeError(`sats must be a positive integer, got ${String(sats)}`);
  }
  const value = BigInt(sats);
  const dust = dustThreshold(script);
  if (value < dust) throw new RangeError(`${value} sats to ${payment.address} is below the dust threshold of ${dust} sats`);
  return { script, value };
}

function positiveInt(value: number, name: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > max) throw new RangeError(`${name} must be an integer from 1 to ${max}, got ${value}`);
  return value;
}

function nonNegativeInt(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  return value;
}

function sumCoins(coins: Coin[]): bigint {
  return coins.reduce((sum, c) => sum + c.value, 0n);
}

function sumOutputs(tx: bitcoin.Transaction): bigint {
  return tx.outs.reduce((sum, o) => sum + o.value, 0n);
}
