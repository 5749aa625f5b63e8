import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Clock } from '../../../src/clock.ts';
import { readCookieFile, RpcClient } from '../../../src/bitcoin/rpc-client.ts';
import { btcToSats, satsToBtcString } from '../../../src/domain/money.ts';
import { startFakeBitcoind, type FakeBitcoind } from '../../fakes/bitcoind/index.ts';

// The chain scenarios drive a node through this interface, so the same test
// bodies run against the fake bitcoind (always) and a real `bitcoind -regtest`
// (when BITCOIND names its binary).

export interface ChainNode {
  kind: 'fake' | 'real';
  rpcUrl: string;
  cookieFile: string;
  zmqEndpoint: string;
  tip(): Promise<{ height: number; hash: string }>;
  pay(address: string, sats: number, opts?: { rbf?: boolean }): Promise<string>;
  payMany(outputs: Array<{ address: string; sats: number }>): Promise<string>;
  /** `to`: the address the coinbases pay (default: the node's own wallet). */
  mine(n?: number, opts?: { to?: string }): Promise<void>;
  /** Mines a block holding a new transaction paying these outputs (0 or dust allowed) that never was in the mempool. */
  mineTx(outputs: Array<{ address: string; sats: number }>): Promise<string>;
  /** RBF: outputs [] sends everything back to the node's own wallet. */
  replace(txid: string, opts?: { outputs?: [] }): Promise<string>;
  /** Disconnect `depth` blocks and mine depth+1 others without the given transactions. */
  reorg(depth: number, opts: { dropTxids?: string[]; leaveInMempool?: string[] }): Promise<void>;
  /** Back to the branch ending at `hash` that a reorg took off the best chain, mined on until it is one block longer than the best chain was (coinbase-only blocks). */
  reorgBack(hash: string): Promise<void>;
  waitForSubscriber(): Promise<void>;
  stop(): Promise<void>;
  /** The fake only: test controls a real node does not have. */
  fake?: FakeBitcoind;
}

export async function startFakeNode(clock: Clock): Promise<ChainNode> {
  const node = await startFakeBitcoind({ clock });
  return {
    kind: 'fake',
    rpcUrl: node.rpcUrl,
    cookieFile: node.cookieFile,
    zmqEndpoint: node.zmqEndpoint,
    tip: async () => ({ height: node.tipHeight, hash: node.tipHash }),
    pay: (a, s, o) => node.pay(a, s, o),
    payMany: (outs) => node.payMany(outs),
    mineTx: (outs) => node.mineTx(outs),
    mine: async (n = 1, o = {}) => void (await node.mine(n, o)),
    replace: (txid, o) => node.replace(txid, o),
    reorg: async (depth, o) => void (await node.reorg(depth, o)),
    reorgBack: (hash) => node.reorgBack(hash),
    waitForSubscriber: () => node.waitForSubscriber(['rawtx', 'sequence', 'hashblock'], 5000),
    stop: () => node.stop(),
    fake: node,
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * A real bitcoind -regtest in a temp datadir, ZMQ and RPC on loopback, with a
 * funded wallet. Its time follows the test's clock (setmocktime before each
 * step), as the fake's does: block and mempool times are Till's to judge.
 */
export async function startRealNode(binary: string, clock: Clock): Promise<ChainNode> {
  const dir = mkdtempSync(join(tmpdir(), 'till-bitcoind-'));
  const [rpcPort, p2pPort, zmqPort] = [await freePort(), await freePort(), await freePort()];
  const zmq = `tcp://127.0.0.1:${zmqPort}`;
  const child: ChildProcess = spawn(binary, [
    '-regtest', `-datadir=${dir}`, '-server', '-listen=0', `-port=${p2pPort}`, `-rpcport=${rpcPort}`, '-rpcbind=127.0.0.1', '-rpcallowip=127.0.0.1',
    `-zmqpubsequence=${zmq}`, `-zmqpubrawtx=${zmq}`, `-zmqpubhashblock=${zmq}`, '-fallbackfee=0.0002', '-printtoconsole=0', '-dnsseed=0', '-fixedseeds=0',
    // Each payment spends confirmed coins only, so each can be replaced on its own (as the fake's wallet does).
    '-spendzeroconfchange=0',
  ], { stdio: 'ignore' });
  const cookieFile = join(dir, 'regtest', '.cookie');
  const rpc = new RpcClient({ url: `http://127.0.0.1:${rpcPort}`, credentials: () => readCookieFile(cookieFile), timeoutMs: 30_000 });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await rpc.call('getblockchaininfo');
      break;
    } catch (err) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`bitcoind did not start: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const followClock = () => rpc.call('setmocktime', [Math.floor(clock.now() / 1000)]);
  await followClock();
  await rpc.call('createwallet', ['till-tests']);
  const wallet = new RpcClient({ url: `http://127.0.0.1:${rpcPort}/wallet/till-tests`, credentials: () => readCookieFile(cookieFile) });
  const own = (await wallet.call('getnewaddress')) as string;
  // 150 blocks: 50 mature coinbases to pay from.
  await rpc.call('generatetoaddress', [150, own]);
  /** A fee-bumped replacement that pays the same amount to the wallet itself instead. */
  const spendBack = async (txid: string): Promise<string> => {
    const tx = (await wallet.call('gettransaction', [txid])) as { amount: number };
    const to = (await wallet.call('getnewaddress')) as string;
    const sats = btcToSats(String(Math.abs(tx.amount)));
    return ((await wallet.call('bumpfee', [txid, { outputs: [{ [to]: satsToBtcString(sats) }] }])) as { txid: string }).txid;
  };
  const tip = async () => {
    const height = (await rpc.call('getblockcount')) as number;
    return { height, hash: (await rpc.call('getblockhash', [height])) as string };
  };
  return {
    kind: 'real',
    rpcUrl: `http://127.0.0.1:${rpcPort}`,
    cookieFile,
    zmqEndpoint: zmq,
    tip,
    pay: async (address, sats, o = {}) => {
      await followClock();
      return (await wallet.call('sendtoaddress', [address, satsToBtcString(sats), '', '', false, o.rbf ?? true])) as string;
    },
    payMany: async (outs) => {
      await followClock();
      return (await wallet.call('sendmany', ['', Object.fromEntries(outs.map((o) => [o.address, satsToBtcString(o.sats)]))])) as string;
    },
    mine: async (n = 1, o = {}) => {
      await followClock();
      await rpc.call('generatetoaddress', [n, o.to ?? own]);
    },
    mineTx: async (outs) => {
      await followClock();
      // A confirmed coin the wallet's mempool transactions do not spend; the rest back to the wallet, less a fee.
      const coin = ((await wallet.call('listunspent')) as Array<{ txid: string; vout: number; amount: number }>)[0]!;
      const change = (await wallet.call('getnewaddress')) as string;
      const rest = btcToSats(String(coin.amount)) - outs.reduce((sum, o) => sum + o.sats, 0) - 10_000;
      const raw = await wallet.call('createrawtransaction', [[{ txid: coin.txid, vout: coin.vout }], [...outs.map((o) => ({ [o.address]: satsToBtcString(o.sats) })), { [change]: satsToBtcString(rest) }]]);
      const signed = (await wallet.call('signrawtransactionwithwallet', [raw])) as { hex: string };
      await rpc.call('generateblock', [own, [signed.hex]]);
      return (await rpc.call('decoderawtransaction', [signed.hex]) as { txid: string }).txid;
    },
    replace: async (txid, o = {}) => {
      await followClock();
      return o.outputs ? spendBack(txid) : ((await wallet.call('bumpfee', [txid])) as { txid: string }).txid;
    },
    reorg: async (depth, o) => {
      await followClock();
      const { height } = await tip();
      await rpc.call('invalidateblock', [(await rpc.call('getblockhash', [height - depth + 1])) as string]);
      for (const txid of o.dropTxids ?? []) await spendBack(txid);
      const leave = new Set(o.leaveInMempool ?? []);
      const mempool = ((await rpc.call('getrawmempool')) as string[]).filter((t) => !leave.has(t));
      await rpc.call('generateblock', [own, mempool]);
      for (let i = 0; i < depth; i++) await rpc.call('generateblock', [own, []]);
    },
    reorgBack: async (hash) => {
      await followClock();
      // The branch's first block, and the best chain's block at its height: that one is invalidated.
      let first = hash;
      for (;;) {
        const header = (await rpc.call('getblockheader', [first])) as { confirmations: number; previousblockhash: string };
        const prev = (await rpc.call('getblockheader', [header.previousblockhash])) as { confirmations: number };
        if (prev.confirmations !== -1) break;
        first = header.previousblockhash;
      }
      const height = ((await rpc.call('getblockheader', [first])) as { height: number }).height;
      const leaving = (await rpc.call('getblockcount')) as number;
      await rpc.call('invalidateblock', [(await rpc.call('getblockhash', [height])) as string]);
      await rpc.call('reconsiderblock', [first]);
      while (((await rpc.call('getblockcount')) as number) <= leaving) await rpc.call('generateblock', [own, []]);
    },
    // Core's publisher has no subscription feedback: give the slow joiner time.
    waitForSubscriber: () => new Promise((r) => setTimeout(r, 1000)),
    stop: async () => {
      try {
        await rpc.call('stop');
      } catch {
        child.kill('SIGKILL');
      }
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
