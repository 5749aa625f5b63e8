import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { H3Event } from 'h3';
import type { ApiError } from '../../domain/errors.ts';
import { errorBody, errorHeaders } from '../errors.ts';
import type { RequestLog } from '../middleware/request-context.ts';
import { isJsonType, MAX_JSON_BODY_BYTES, parseJsonObjectBytes, readJsonObject, readNodeBody } from './body.ts';
import { wasAnsweredByClientError } from './client-error.ts';
import { eventRequest, matchesSegments, NodeRequest, parseRoutePath, plainPathOf, type DirectRequest, type RoutePath } from './direct-request.ts';
import { sendJson } from './send-json.ts';

export interface DirectAnswer {
  status: number;
  /** The JSON body, serialized. */
  json: string;
  /** Headers besides content-type, x-request-id and content-length. */
  headers?: Readonly<Record<string, string>>;
}

export interface DirectPostSpec {
  /**
   * The answer to a request with a JSON object body, which `body` reads (as
   * readJsonObject does, errors and all) when the route wants it: a check
   * of the headers, such as the API key, can be made before. A thrown error
   * is answered in the envelope, as the app answers it.
   */
  answer(req: DirectRequest, body: () => Promise<Record<string, unknown>>): Promise<DirectAnswer>;
}

interface Route extends RoutePath {
  spec: DirectPostSpec;
}

export interface DirectPostOptions {
  log: RequestLog;
  /** The write queue's: an answer waits for the fdatasync of what it may have read, and is replaced by its failure. */
  durable(): Promise<void> | null;
  /** The envelope's error for anything thrown (request-context's apiErrorOf). */
  errorOf(err: unknown, requestId: string): ApiError;
}

/**
 * POST routes with a JSON body (invoice creation). Each is an h3 handler
 * like any route, and the server also runs it straight on Node's request,
 * ahead of srvx and h3, whose web Request and Response and middleware chain
 * cost ~7 % of a creation (docs/DECISIONS.md "Direct GETs, and creation").
 * Unlike a direct GET, whose errors go on to h3, the Node side answers every
 * request it takes, errors included: once the body is read, h3 could not
 * read it again. So it takes only a request whose headers leave nothing to
 * decide that h3 decides otherwise: a plain path without a query, a JSON
 * Content-Type, a Content-Length within the limit, no Transfer-Encoding or
 * Expect, no header sent twice. The body is read when the route asks, as
 * over h3 (a wrong API key is answered before it is in). The envelope, its
 * headers, the wait for durability and the log line are the app's
 * (request-context.ts), and a test holds both sides' answers equal.
 */
export class DirectPosts {
  readonly #routes: Route[] = [];
  readonly #opts: DirectPostOptions;

  constructor(opts: DirectPostOptions) {
    this.#opts = opts;
  }

  /** Registers a direct POST and returns its h3 handler, for defineRoute. */
  post(path: string, spec: DirectPostSpec): (event: H3Event) => Promise<string> {
    this.#routes.push({ ...parseRoutePath(path), spec });
    return async (event) => {
      const req = eventRequest(event);
      try {
        const answer = await spec.answer(req, async () => (await readJsonObject(event)).value);
        for (const [name, value] of Object.entries(answer.headers ?? {})) event.res.headers.set(name, value);
        return sendJson(event, answer.json, answer.status);
      } finally {
        if (req.keyId) event.context.apiKeyId = req.keyId;
      }
    };
  }

  /** Takes a Node request if one of the routes matches it and its headers are plain (false leaves it to the app), and answers it. */
  take(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'POST') return false;
    const path = req.url ?? '';
    // A query fails the plain path: the app refuses it (fields go in the body).
    const segments = plainPathOf(req, path);
    if (segments === null || !isPlainBody(req)) return false;
    for (const route of this.#routes) {
      if (!matchesSegments(route, segments)) continue;
      this.#answer(route, new NodeRequest(req, route, segments, ''), res, path).catch((err: unknown) => {
        // Our own bug past the answer's rendering (writing it): logged, and the connection cut, not the process.
        this.#opts.errorOf(err, 'unknown');
        res.destroy();
      });
      return true;
    }
    return false;
  }

  async #answer(route: Route, request: NodeRequest, res: ServerResponse, path: string): Promise<void> {
    const started = performance.now();
    const requestId = randomUUID();
    const error = (err: unknown): DirectAnswer => {
      const apiError = this.#opts.errorOf(err, requestId);
      return { status: apiError.status, json: errorBody(apiError, requestId), headers: errorHeaders(apiError, requestId) };
    };
    let answer: DirectAnswer;
    try {
      answer = await route.spec.answer(request, async () => parseJsonObjectBytes(await readNodeBody(request.node, MAX_JSON_BODY_BYTES)));
    } catch (err) {
      answer = error(err);
    }
    const pending = this.#opts.durable();
    if (pending) await pending.catch((err: unknown) => (answer = error(err)));
    // A body that stalled past its deadline was answered, and logged, by the server's clientError listener.
    if (wasAnsweredByClientError(request.node) || res.headersSent) return;
    const headers = ['content-type', 'application/json; charset=utf-8', 'x-request-id', requestId];
    for (const [name, value] of Object.entries(answer.headers ?? {})) if (name !== 'content-type' && name !== 'x-request-id') headers.push(name, value);
    headers.push('content-length', String(Buffer.byteLength(answer.json)));
    res.writeHead(answer.status, headers);
    res.end(answer.json);
    this.#opts.log({ requestId, method: 'POST', path, status: answer.status, started, keyId: request.keyId });
  }
}

/**
 * Headers that leave the body to be read as the app reads it: JSON, its
 * length declared and within the limit (a larger one is refused by the app,
 * after the API key), no Expect (Node's and the app's business), and no
 * header sent twice (Node keeps one, the app's web Headers join them).
 */
function isPlainBody(req: IncomingMessage): boolean {
  const { headers } = req;
  const length = headers['content-length'];
  if (length === undefined || !/^\d{1,9}$/.test(length) || Number(length) > MAX_JSON_BODY_BYTES) return false;
  if (headers['transfer-encoding'] !== undefined || headers.expect !== undefined || !isJsonType(headers['content-type'] ?? '')) return false;
  return !hasRepeatedHeader(req.rawHeaders);
}

function hasRepeatedHeader(rawHeaders: readonly string[]): boolean {
  // A client sends a handful: more than this goes to the app rather than being compared pairwise.
  if (rawHeaders.length > 64) return true;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    for (let j = i + 2; j < rawHeaders.length; j += 2) {
      if (rawHeaders[i]!.length === rawHeaders[j]!.length && rawHeaders[i]!.toLowerCase() === rawHeaders[j]!.toLowerCase()) return true;
    }
  }
  return false;
}
