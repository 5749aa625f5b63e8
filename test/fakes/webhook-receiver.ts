// A merchant's webhook receiver for tests: a real HTTP server on 127.0.0.1
// whose answers the test scripts, one per request, and which records every
// request exactly as it arrived.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../../src/clock.ts';
import { listenOnLoopback } from '../helpers/listen.ts';

export type ScriptedAnswer =
  /** An ordinary answer. */
  | { kind: 'status'; status: number; body?: string; headers?: Record<string, string> }
  /** Read the request, then never answer (for the 10 s attempt timeout). */
  | { kind: 'hang' }
  /** Send the status line and headers at once, then one chunk every intervalMs. */
  | { kind: 'slowBody'; status: number; chunk: string; chunks: number; intervalMs: number }
  /** Destroy the connection with a TCP reset instead of answering. */
  | { kind: 'reset' }
  /** Send the status line, headers announcing a longer body and part of it, then close the connection. */
  | { kind: 'cutBody'; status: number }
  | { kind: 'redirect'; status: number; location: string };

export type Script = (request: ReceivedRequest) => ScriptedAnswer;

export interface ReceivedRequest {
  method: string;
  /** Path and query as sent. */
  url: string;
  /** Lower-case names, as node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body bytes. */
  rawBody: Buffer;
  /** rawBody decoded as UTF-8. */
  body: string;
  /** Epoch ms (from the receiver's clock) when the whole body had arrived. */
  receivedAt: number;
}

export interface WebhookReceiver {
  /** Base URL, e.g. http://127.0.0.1:41234 (any path is accepted). */
  url: string;
  requests: ReceivedRequest[];
  /** Queue answers, one per request (then 200 again), or answer every request with a function. */
  respondWith(...script: ScriptedAnswer[] | [Script]): void;
  /** Resolves once at least n requests arrived; rejects after timeoutMs. */
  waitForRequests(n: number, timeoutMs: number): Promise<ReceivedRequest[]>;
  /** Stops the server and destroys every connection, hanging and dribbling ones included. */
  close(): Promise<void>;
}

export const answer = {
  status: (status: number, body = '', headers: Record<string, string> = {}): ScriptedAnswer => ({ kind: 'status', status, body, headers }),
  hang: (): ScriptedAnswer => ({ kind: 'hang' }),
  slowBody: (opts: { status?: number; chunk?: string; chunks?: number; intervalMs?: number } = {}): ScriptedAnswer => ({
    kind: 'slowBody',
    status: opts.status ?? 200,
    chunk: opts.chunk ?? '.',
    // Defaults dribble for 20 s, well past the 10 s attempt timeout.
    chunks: opts.chunks ?? 20,
    intervalMs: opts.intervalMs ?? 1000,
  }),
  reset: (): ScriptedAnswer => ({ kind: 'reset' }),
  cutBody: (status = 200): ScriptedAnswer => ({ kind: 'cutBody', status }),
  redirect: (location: string, status = 302): ScriptedAnswer => ({ kind: 'redirect', status, location }),
};

const DEFAULT_ANSWER = answer.status(200, 'ok');

export async function startWebhookReceiver(opts: { clock?: Clock } = {}): Promise<WebhookReceiver> {
  const clock = opts.clock ?? systemClock;
  const requests: ReceivedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const waiters = new Set<() => void>();
  let queue: ScriptedAnswer[] = [];
  let script: Script | null = null;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const request: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: { ...req.headers },
        rawBody,
        body: rawBody.toString('utf8'),
        receivedAt: clock.now(),
      };
      requests.push(request);
      for (const wake of waiters) wake();
      const next = script ? script(request) : (queue.shift() ?? DEFAULT_ANSWER);
      playAnswer(next, req, res);
    });
  });

  function playAnswer(a: ScriptedAnswer, req: IncomingMessage, res: ServerResponse): void {
    switch (a.kind) {
      case 'status':
        res.writeHead(a.status, { 'content-type': 'text/plain; charset=utf-8', ...a.headers });
        res.end(a.body);
        return;
      case 'hang':
        return;
      case 'reset':
        req.socket.resetAndDestroy();
        return;
      case 'cutBody':
        res.writeHead(a.status, { 'content-length': '100' });
        res.write('ok', () => req.socket.destroy());
        return;
      case 'redirect':
        res.writeHead(a.status, { location: a.location, 'content-length': '0' });
        res.end();
        return;
      case 'slowBody': {
        res.writeHead(a.status, { 'content-type': 'text/plain; charset=utf-8' });
        res.flushHeaders();
        let sent = 0;
        const stop = () => {
          clearInterval(timer);
          timers.delete(timer);
        };
        const timer = setInterval(() => {
          res.write(a.chunk);
          if (++sent >= a.chunks) {
            stop();
            res.end();
          }
        }, a.intervalMs);
        timers.add(timer);
        // A caller that gave up closes the connection: stop dribbling into it.
        res.on('close', stop);
        return;
      }
    }
  }

  const url = await listenOnLoopback(server);

  return {
    url,
    requests,
    respondWith(...given: ScriptedAnswer[] | [Script]) {
      const [first] = given;
      if (typeof first === 'function') {
        script = first;
        queue = [];
      } else {
        script = null;
        queue = [...(given as ScriptedAnswer[])];
      }
    },
    waitForRequests(n, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length < n) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(requests.slice());
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`webhook receiver: expected ${n} request(s) within ${timeoutMs} ms, got ${requests.length}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const timer of timers) clearInterval(timer);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
