// A fake bitcoind for tests: real regtest blocks and transactions, Core's
// JSON-RPC over HTTP and Core's ZMQ notifications over loopback sockets.
// See docs/FAKE_BITCOIND.md.
import { FakeBitcoind, type FakeBitcoindOptions } from './node.ts';

export { FakeBitcoind } from './node.ts';
export type {
  FakeBitcoindOptions,
  MineOptions,
  PayOptions,
  PaymentSpec,
  ReorgOptions,
  ReorgResult,
  ReplaceOptions,
} from './node.ts';
export { ZMQ_TOPICS, type ZmqDropPredicate, type ZmqMessage, type ZmqTopic } from './zmq-publisher.ts';
export { GENESIS_HASH } from './consensus.ts';

/** Starts a fake regtest node (RPC and ZMQ on random 127.0.0.1 ports). Call stop() when done. */
export function startFakeBitcoind(opts: FakeBitcoindOptions = {}): Promise<FakeBitcoind> {
  return FakeBitcoind.start(opts);
}
