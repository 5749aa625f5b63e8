// A minimal webhook receiver, run as a child process of the webhooks bench so
// its CPU is not the delivery worker's: answers 200 at once, checks every
// signature, and on request reports when each event arrived (monotonic clock,
// shared by all processes on Linux).
import { createServer } from 'node:http';
import { verifyWebhook } from '../../../src/webhooks/signature.ts';

export type ReceiverCommand =
  | { type: 'secrets'; byPath: Record<string, string> }
  | { type: 'report-arrivals'; on: boolean }
  | { type: 'stats' };

export type ReceiverMessage =
  | { type: 'listening'; port: number }
  | { type: 'arrival'; eventId: string; atNs: number }
  | { type: 'stats'; received: number; valid: number; invalid: number };

const send = (m: ReceiverMessage) => process.send!(m);
let secrets: Record<string, string> = {};
let reportArrivals = false;
let received = 0;
let valid = 0;
let invalid = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const atNs = Number(process.hrtime.bigint());
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    received++;
    const secret = secrets[req.url ?? ''];
    const header = req.headers['x-service-signature'];
    const ok = secret !== undefined && verifyWebhook(Buffer.concat(chunks), typeof header === 'string' ? header : null, [secret], { now: Date.now() }).ok;
    if (ok) valid++;
    else invalid++;
    const eventId = req.headers['x-service-event-id'];
    if (reportArrivals && typeof eventId === 'string') send({ type: 'arrival', eventId, atNs });
  });
});

process.on('message', (m: ReceiverCommand) => {
  if (m.type === 'secrets') secrets = m.byPath;
  else if (m.type === 'report-arrivals') reportArrivals = m.on;
  else if (m.type === 'stats') send({ type: 'stats', received, valid, invalid });
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  send({ type: 'listening', port: typeof addr === 'object' && addr ? addr.port : 0 });
});
