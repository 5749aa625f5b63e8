// The ceiling for the invoice benchmark: the same stack as src/http/server.ts
// (an h3 app served by crossws's serve on Node) doing nothing but reading the
// JSON body and sending it back. Till's creation rate is printed beside this.
// Run: node scripts/bench/echo-server.ts --port 8090
import { H3 } from 'h3';
import { serve } from 'crossws/server';
import { readPortArg } from './support/children.ts';

const app = new H3();
app.post('/echo', async (event) => event.req.json());

const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: readPortArg(process.argv), silent: true, gracefulShutdown: false });
await server.ready();
process.once('SIGTERM', () => void server.close(true).then(() => process.exit(0)));
