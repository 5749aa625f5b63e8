import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { H3Event } from 'h3';
import { afterReads } from './after-reads.ts';
import { eventRequest, matchesSegments, NodeRequest, parseRoutePath, plainPathOf, type DirectRequest, type RoutePath } from './direct-request.ts';
import { sendJson } from './send-json.ts';
import type { RequestLog } from '../middleware/request-context.ts';

export interface DirectGetSpec {
  /** Headers of a 200 answer besides content-type, x-request-id and content-length. */
  headers?: Readonly<Record<string, string>>;
  /** The 200 JSON body. Anything else is thrown, and rendered by the app. */
  answer(req: DirectRequest): string;
}

type H3Handler = (event: H3Event) => string;

interface Route extends RoutePath {
  rawHeaders: readonly string[];
  spec: DirectGetSpec;
}

/**
 * GET routes whose answer is a synchronous read (polled invoices, snapshots,
 * list pages). Each is an h3 handler like any route, and the server also
 * tries them straight on Node's request, ahead of srvx and h3: the web
 * Request and Response wrappers and the middleware chain cost more than
 * these reads (docs/DECISIONS.md "Direct GETs"). The Node side answers the
 * requests of an event-loop turn together, once all of them are read (see
 * `take`), and only with a 200 of a plain request; anything unusual
 * (another method, a path with characters URL parsing would rewrite, a
 * repeated header the route reads, a thrown error) goes on to h3, which
 * answers it in full, envelope and all.
 */
export class DirectGets {
  readonly #routes: Route[] = [];
  readonly #log: RequestLog;
  readonly #whenDurable: (read: () => void) => void | Promise<void>;
  readonly #errorOf: (err: unknown, requestId: string) => unknown;

  /**
   * `whenDurable`: the write queue's; answers are read and sent through it
   * (docs/DECISIONS.md). `errorOf` logs our own bug (request-context's apiErrorOf).
   */
  constructor(log: RequestLog, whenDurable: (read: () => void) => void | Promise<void>, errorOf: (err: unknown, requestId: string) => unknown) {
    this.#log = log;
    this.#whenDurable = whenDurable;
    this.#errorOf = errorOf;
  }

  /** Registers a direct GET and returns its h3 handler, for defineRoute. */
  get(path: string, spec: DirectGetSpec): H3Handler {
    const headers = Object.entries(spec.headers ?? {});
    const rawHeaders = [...headers.flat(), 'content-type', 'application/json; charset=utf-8'];
    this.#routes.push({ ...parseRoutePath(path), rawHeaders, spec });
    return (event) => {
      const req = eventRequest(event);
      try {
        const json = spec.answer(req);
        for (const [name, value] of headers) event.res.headers.set(name, value);
        return sendJson(event, json);
      } finally {
        if (req.keyId) event.context.apiKeyId = req.keyId;
      }
    };
  }

  /**
   * Takes a Node request if one of the routes matches it (false leaves it to
   * the app) and answers it once this turn's requests are all read: then one
   * look at whether another process committed serves every request taken, each
   * arrived before that look (docs/DECISIONS.md). While a commit waits for
   * its fdatasync, the reads wait for it too. A route that cannot answer
   * hands the request to `app` then.
   */
  take(req: IncomingMessage, res: ServerResponse, app: NodeListener): boolean {
    if (req.method !== 'GET') return false;
    const started = performance.now();
    const url = req.url ?? '';
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const segments = plainPathOf(req, path);
    if (segments === null || (queryAt >= 0 && url.includes('#', queryAt))) return false;
    for (const route of this.#routes) {
      if (!matchesSegments(route, segments)) continue;
      const request = new NodeRequest(req, route, segments, queryAt < 0 ? '' : url.slice(queryAt + 1));
      // Our own bug in writing the answer (a header Node refuses, a log line that cannot be written) is logged and
      // cuts this connection; thrown, it would end the process, and the turn's other answers with it.
      const answer = () => {
        try {
          this.#answer(route, request, res, app, path, started);
        } catch (err) {
          this.#errorOf(err, 'unknown');
          res.destroy();
        }
      };
      afterReads(() => {
        const answered = this.#whenDurable(answer);
        // Refused after a failed fdatasync, before reading: the app answers with the error.
        if (answered instanceof Promise) {
          answered.catch(() => {
            if (!res.headersSent) app(request.node, res);
          });
        }
      });
      return true;
    }
    return false;
  }

  #answer(route: Route, request: NodeRequest, res: ServerResponse, app: NodeListener, path: string, started: number): void {
    let json: string | undefined;
    try {
      json = route.spec.answer(request);
    } catch {
      // Left to the app, which answers it in full.
    }
    if (json === undefined) return app(request.node, res);
    const requestId = randomUUID();
    res.writeHead(200, [...route.rawHeaders, 'x-request-id', requestId, 'content-length', String(Buffer.byteLength(json))]);
    res.end(json);
    this.#log({ requestId, method: 'GET', path, status: 200, started, keyId: request.keyId });
  }
}

type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;
