// A minimal webhook receiver, run as a child process of the webhooks bench:
// answers 200 at once, checks every signature, and on request reports when
// each event arrived (monotonic clock, shared by all processes on Linux).
//
// It speaks HTTP/1.1 on a plain TCP server rather than node:http: a merchant's
// server runs on its own machine, but this one shares the bench's two cores,
// and node:http's parsing cost it ~140 µs of CPU a delivery, a third of the
// machine (this parser: ~70 µs, most of it the signature check). It reads
// what Till sends: a request line, headers, a Content-Length body, requests
// back to back on a kept-alive connection; anything else is answered 400 and
// the connection closed.
import { createServer, type Socket } from 'node:net';
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

const OK = Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok');
const BAD = Buffer.from('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
/** A request head longer than this without its end is refused. */
const MAX_HEAD = 16 * 1024;

interface Request {
  target: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** Takes one whole request off the front of `buf`: the request and the rest, 'partial', or 'bad'. */
function takeRequest(buf: Buffer): { request: Request; rest: Buffer } | 'partial' | 'bad' {
  const end = buf.indexOf(HEAD_END);
  if (end < 0) return buf.length > MAX_HEAD ? 'bad' : 'partial';
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const [method, target, version] = lines[0]!.split(' ');
  if (method !== 'POST' || !target || version !== 'HTTP/1.1') return 'bad';
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return 'bad';
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length']);
  if (!/^\d+$/.test(headers['content-length'] ?? '') || !Number.isSafeInteger(length)) return 'bad';
  const bodyStart = end + HEAD_END.length;
  if (buf.length < bodyStart + length) return 'partial';
  return { request: { target, headers, body: buf.subarray(bodyStart, bodyStart + length) }, rest: buf.subarray(bodyStart + length) };
}

function receive({ target, headers, body }: Request): void {
  const atNs = Number(process.hrtime.bigint());
  received++;
  const secret = secrets[target];
  const ok = secret !== undefined && verifyWebhook(body, headers['x-service-signature'] ?? null, [secret], { now: Date.now() }).ok;
  if (ok) valid++;
  else invalid++;
  const eventId = headers['x-service-event-id'];
  if (reportArrivals && eventId) send({ type: 'arrival', eventId, atNs });
}

function serve(socket: Socket): void {
  let buf: Buffer = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    for (;;) {
      const taken = takeRequest(buf);
      if (taken === 'partial') return;
      if (taken === 'bad') return void socket.end(BAD);
      buf = taken.rest;
      socket.write(OK);
      receive(taken.request);
    }
  });
  socket.on('error', () => undefined);
}

process.on('message', (m: ReceiverCommand) => {
  if (m.type === 'secrets') secrets = m.byPath;
  else if (m.type === 'report-arrivals') reportArrivals = m.on;
  else if (m.type === 'stats') send({ type: 'stats', received, valid, invalid });
});
process.on('disconnect', () => process.exit(0));

const server = createServer(serve);
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  send({ type: 'listening', port: typeof addr === 'object' && addr ? addr.port : 0 });
});
