// The fake bitcoind (test/fakes/bitcoind) in a child process of the chain
// bench, so building and signing payments does not run on Till's event loop.
// Each payment reports when its rawtx was handed to the ZMQ socket
// (process.hrtime: one monotonic clock for all processes on Linux).
import { startFakeBitcoind } from '../../../test/fakes/bitcoind/index.ts';

export type FakeNodeCommand = { type: 'wait-subscriber' } | { type: 'pay'; address: string; sats: number };

export type FakeNodeMessage =
  | { type: 'ready'; rpcUrl: string; cookieFile: string; zmqEndpoint: string }
  | { type: 'subscribed' }
  | { type: 'paid'; txid: string; publishedNs: number }
  | { type: 'error'; message: string };

const send = (m: FakeNodeMessage) => process.send!(m);
const initialBlocks = Number(process.argv[2] ?? 150);

// Coinbases mature after 100 blocks and the wallet spends confirmed coins only:
// initialBlocks - 100 payments can be made without mining.
const node = await startFakeBitcoind({ initialBlocks });
let publishedNs = 0;
node.dropZmq((m) => {
  if (m.topic === 'rawtx') publishedNs = Number(process.hrtime.bigint());
  return false;
});

process.on('message', (m: FakeNodeCommand) => {
  const run = async () => {
    if (m.type === 'wait-subscriber') {
      await node.waitForSubscriber(['rawtx', 'sequence', 'hashblock'], 10_000);
      send({ type: 'subscribed' });
    } else if (m.type === 'pay') {
      const txid = await node.pay(m.address, m.sats);
      send({ type: 'paid', txid, publishedNs });
    }
  };
  run().catch((err: Error) => send({ type: 'error', message: err.message }));
});
process.on('disconnect', () => void node.stop().finally(() => process.exit(0)));
process.once('SIGTERM', () => void node.stop().finally(() => process.exit(0)));

send({ type: 'ready', rpcUrl: node.rpcUrl, cookieFile: node.cookieFile, zmqEndpoint: node.zmqEndpoint });
