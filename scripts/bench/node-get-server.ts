// The floor under every GET figure: Node's own HTTP server answering each GET
// with a fixed JSON body of an invoice's size and Till's headers (a fresh
// request id, content type and length), nothing else: no routing, no lookup,
// no log line. Till's GET rates are printed beside it, from the same run.
// Run: node scripts/bench/node-get-server.ts --port 8091
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { readPortArg } from './support/children.ts';

// About the size of an invoice's JSON view (660-770 bytes).
const BODY = JSON.stringify({ object: 'filler', text: 'x'.repeat(700) });
const LENGTH = String(Buffer.byteLength(BODY));

const server = createServer((_req, res) => {
  res.writeHead(200, ['content-type', 'application/json; charset=utf-8', 'x-request-id', randomUUID(), 'content-length', LENGTH]);
  res.end(BODY);
});
server.listen(readPortArg(process.argv), '127.0.0.1');
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
