import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { H3, H3Event } from 'h3';
import { afterReads } from './after-reads.ts';
import { routeParam } from './route.ts';
import { sendJson } from './send-json.ts';
import type { RequestLog } from '../middleware/request-context.ts';

/**
 * What a direct GET reads of its request: the same values whether h3 or the
 * Node listener received it.
 */
export interface DirectRequest {
  /** A route parameter, decoded. */
  param(name: string): string;
  readonly query: URLSearchParams;
  header(name: string): string | null;
  /** The API key that authenticated the request, for the log line. */
  keyId?: string;
}

export interface DirectGetSpec {
  /** Headers of a 200 answer besides content-type, x-request-id and content-length. */
  headers?: Readonly<Record<string, string>>;
  /** The 200 JSON body. Anything else is thrown, and rendered by the app. */
  answer(req: DirectRequest): string;
}

type H3Handler = (event: H3Event) => string;

interface Route {
  /** The path's segments, with null where a parameter goes. */
  segments: readonly (string | null)[];
  /** Segment index and name of each parameter. */
  params: readonly (readonly [number, string])[];
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

  /** `whenDurable`: the write queue's; answers are read and sent through it (docs/DECISIONS.md). */
  constructor(log: RequestLog, whenDurable: (read: () => void) => void | Promise<void>) {
    this.#log = log;
    this.#whenDurable = whenDurable;
  }

  /** Registers a direct GET and returns its h3 handler, for defineRoute. */
  get(path: string, spec: DirectGetSpec): H3Handler {
    const headers = Object.entries(spec.headers ?? {});
    const rawHeaders = [...headers.flat(), 'content-type', 'application/json; charset=utf-8'];
    const segments = path.split('/');
    this.#routes.push({
      segments: segments.map((seg) => (seg.startsWith(':') ? null : seg)),
      params: segments.flatMap((seg, i) => (seg.startsWith(':') ? [[i, seg.slice(1)] as const] : [])),
      rawHeaders,
      spec,
    });
    return (event) => {
      const req: DirectRequest = {
        param: (name) => routeParam(event, name),
        get query() {
          return event.url.searchParams;
        },
        header: (name) => event.req.headers.get(name),
      };
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
    // Without Host (HTTP/1.1), the app refuses it in the envelope.
    if (req.method !== 'GET' || (req.headers.host === undefined && req.httpVersion === '1.1')) return false;
    const started = performance.now();
    const url = req.url ?? '';
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    // Letters, digits, - and _ between slashes are what URL parsing leaves as
    // they are: no dot segments, escapes or characters it would encode.
    if (!PLAIN_PATH.test(path) || (queryAt >= 0 && url.includes('#', queryAt))) return false;
    const segments = path.split('/');
    for (const route of this.#routes) {
      if (!matchesSegments(route.segments, segments)) continue;
      const request = new NodeRequest(req, route.params, segments, queryAt < 0 ? '' : url.slice(queryAt + 1));
      afterReads(() => {
        const answered = this.#whenDurable(() => this.#answer(route, request, res, app, path, started));
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

const PLAIN_PATH = /^(\/[A-Za-z0-9_-]+)+$/;
/** The query of a request without one, shared: nothing writes to it. */
const NO_QUERY = new URLSearchParams();

function matchesSegments(pattern: readonly (string | null)[], segments: readonly string[]): boolean {
  if (pattern.length !== segments.length) return false;
  for (let i = 1; i < pattern.length; i++) {
    if (pattern[i] !== null && pattern[i] !== segments[i]) return false;
  }
  return true;
}

/** A Node request as a direct GET reads it (a class: built once per request, and cheaper than closures). */
class NodeRequest implements DirectRequest {
  keyId?: string;
  readonly node: IncomingMessage;
  readonly #params: Route['params'];
  readonly #segments: readonly string[];
  readonly #search: string;
  #query: URLSearchParams | undefined;

  constructor(req: IncomingMessage, params: Route['params'], segments: readonly string[], search: string) {
    this.node = req;
    this.#params = params;
    this.#segments = segments;
    this.#search = search;
  }

  param(name: string): string {
    for (const [index, param] of this.#params) if (param === name) return this.#segments[index]!;
    return '';
  }

  get query(): URLSearchParams {
    return (this.#query ??= this.#search === '' ? NO_QUERY : new URLSearchParams(this.#search));
  }

  header(name: string): string | null {
    // Node keeps the first of a repeated Authorization; the web Headers h3
    // reads would join them. Such a request is left to h3.
    if (isRepeated(this.node.rawHeaders, name)) throw new Error(`repeated ${name} header`);
    const value = this.node.headers[name];
    return typeof value === 'string' ? value : null;
  }
}

function isRepeated(rawHeaders: readonly string[], lowerName: string): boolean {
  let seen = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.length === lowerName.length && rawHeaders[i]!.toLowerCase() === lowerName) {
      if (seen) return true;
      seen = true;
    }
  }
  return false;
}

const registered = new WeakMap<H3, DirectGets>();

/** The direct GETs of an app, which its routes register into. */
export function createDirectGets(app: H3, log: RequestLog, whenDurable: (read: () => void) => void | Promise<void>): DirectGets {
  const direct = new DirectGets(log, whenDurable);
  registered.set(app, direct);
  return direct;
}

/** What the server tries on a Node request before handing it to the app. */
export function directGetsOf(app: H3): DirectGets | undefined {
  return registered.get(app);
}
