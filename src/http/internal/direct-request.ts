import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';
import { nodeRequestOf } from '../middleware/request-context.ts';
import { routeParam } from './route.ts';

/**
 * What a direct route reads of its request: the same values whether h3 or
 * the Node listener received it (src/http/internal/direct-get.ts,
 * direct-post.ts).
 */
export interface DirectRequest {
  /** A route parameter, decoded. */
  param(name: string): string;
  readonly query: URLSearchParams;
  header(name: string): string | null;
  /** Whether the request carries this header more than once (the web Headers h3 reads join the values). */
  repeats(name: string): boolean;
  /** The API key that authenticated the request, for the log line. */
  keyId?: string;
}

/** A route's path, split for matching: the segments, with null where a parameter goes, and each parameter's place. */
export interface RoutePath {
  segments: readonly (string | null)[];
  params: readonly (readonly [number, string])[];
}

export function parseRoutePath(path: string): RoutePath {
  const segments = path.split('/');
  return {
    segments: segments.map((seg) => (seg.startsWith(':') ? null : seg)),
    params: segments.flatMap((seg, i) => (seg.startsWith(':') ? [[i, seg.slice(1)] as const] : [])),
  };
}

/**
 * The path of a Node request a direct route may take, split into segments,
 * or null. Letters, digits, - and _ between slashes are what URL parsing
 * leaves as they are: no dot segments, escapes or characters it would encode.
 * Without Host (HTTP/1.1) the app refuses it in the envelope.
 */
export function plainPathOf(req: IncomingMessage, path: string): string[] | null {
  if (req.headers.host === undefined && req.httpVersion === '1.1') return null;
  return PLAIN_PATH.test(path) ? path.split('/') : null;
}

const PLAIN_PATH = /^(\/[A-Za-z0-9_-]+)+$/;

export function matchesSegments(route: RoutePath, segments: readonly string[]): boolean {
  const pattern = route.segments;
  if (pattern.length !== segments.length) return false;
  for (let i = 1; i < pattern.length; i++) {
    if (pattern[i] !== null && pattern[i] !== segments[i]) return false;
  }
  return true;
}

/** The request as h3 received it, for a direct route's h3 handler. */
export function eventRequest(event: H3Event): DirectRequest {
  return {
    param: (name) => routeParam(event, name),
    get query() {
      return event.url.searchParams;
    },
    header: (name) => event.req.headers.get(name),
    repeats: (name) => (nodeRequestOf(event)?.headersDistinct[name]?.length ?? 1) > 1,
  };
}

/** The query of a request without one, shared: nothing writes to it. */
const NO_QUERY = new URLSearchParams();

/** A Node request as a direct route reads it (a class: built once per request, and cheaper than closures). */
export class NodeRequest implements DirectRequest {
  keyId?: string;
  readonly node: IncomingMessage;
  readonly #route: RoutePath;
  readonly #segments: readonly string[];
  readonly #search: string;
  #query: URLSearchParams | undefined;

  constructor(req: IncomingMessage, route: RoutePath, segments: readonly string[], search: string) {
    this.node = req;
    this.#route = route;
    this.#segments = segments;
    this.#search = search;
  }

  param(name: string): string {
    for (const [index, param] of this.#route.params) if (param === name) return this.#segments[index]!;
    return '';
  }

  get query(): URLSearchParams {
    return (this.#query ??= this.#search === '' ? NO_QUERY : new URLSearchParams(this.#search));
  }

  header(name: string): string | null {
    // Node keeps the first of a repeated Authorization; the web Headers h3
    // reads would join them. Such a request is left to h3.
    if (this.repeats(name)) throw new Error(`repeated ${name} header`);
    const value = this.node.headers[name];
    return typeof value === 'string' ? value : null;
  }

  repeats(name: string): boolean {
    return countHeader(this.node.rawHeaders, name) > 1;
  }
}

/** How many times a header (named in lower case) is in the raw headers. */
function countHeader(rawHeaders: readonly string[], lowerName: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.length === lowerName.length && rawHeaders[i]!.toLowerCase() === lowerName) count++;
  }
  return count;
}
