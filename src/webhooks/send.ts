import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Agent, Dispatcher } from 'undici';
import { isPrivateAddress } from './address-policy.ts';

export const RESPONSE_BODY_LIMIT = 4096;
const NODE_CA_HINT = /; if the root CA is installed locally, try running Node\.js with --use-system-ca$/;
// undici's words for an answer it will not read; the likeliest one a receiver sends is a 100 Continue that Till
// never asks for (it sends no Expect). Its final answer after it is lost: the attempt fails and is retried.
const BAD_RESPONSE_HINT = ' (an answer Till cannot read: a 100 Continue it did not ask for, a response before the request was sent)';

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
}

export interface SendResult {
  /** The receiver's status code, when a status line arrived in time. */
  status?: number;
  /** First 4 KiB of the response body (the whole characters in it). */
  responseBody: string | null;
  error?: string;
  /** The deadline passed (before the status line, or while the body was still coming). */
  timedOut: boolean;
  durationMs: number;
}

function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as LookupAddress[];
      const allowed = allowPrivate ? list : list.filter((a) => !isPrivateAddress(a.address));
      if (allowed.length === 0) {
        // Not naming the address: the error reaches whoever holds an API key, who need not learn how the host resolves names.
        const e = Object.assign(new Error(`${hostname} resolves only to private addresses; allow them with webhooks.allow_private`), { code: 'EPRIVATE' });
        return callback(e, '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

// undici rather than node:http: about half the CPU per attempt, and an
// attempt is mostly client work on the worker's event loop. Loaded with the
// first attempt: ~7 MiB of heap that a till without webhooks never needs.
type Undici = typeof import('undici');
let undici: Undici | null = null;
let loading: Promise<Undici> | null = null;

// Connections are kept alive between attempts to the same receiver; every new
// socket goes through the guarded lookup, so the address check still applies.
// No cap on connections per origin: the delivery worker bounds the attempts to
// each origin, and an attempt queued here for a socket of ours would spend its
// deadline waiting (several endpoints on one host), then count as a timeout.
const agents = new Map<boolean, Agent>();
function agentFor(allowPrivate: boolean): Agent {
  let agent = agents.get(allowPrivate);
  if (!agent) {
    agent = new undici!.Agent({ keepAliveTimeout: 30_000, connect: { lookup: guardedLookup(allowPrivate) } });
    agents.set(allowPrivate, agent);
  }
  return agent;
}

/**
 * One webhook attempt: POST, no redirects followed, one deadline for the whole
 * exchange (connect, headers and body), at most 4 KiB of the answer kept.
 * Never throws: every outcome is a SendResult.
 */
export function sendWebhook(req: SendRequest): Promise<SendResult> {
  if (!undici) return (loading ??= import('undici').then((m) => (undici = m))).then(() => sendWebhook(req));
  const started = performance.now();
  let url: URL;
  try {
    url = new URL(req.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    return Promise.resolve({ responseBody: null, error: 'invalid URL', timedOut: false, durationMs: 0 });
  }
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  // A literal IP skips DNS, so it is checked here.
  if (!req.allowPrivate && /^[\d.]+$|:/.test(literal) && isPrivateAddress(literal)) {
    return Promise.resolve({ responseBody: null, error: `${literal} is a private address; allow it with webhooks.allow_private`, timedOut: false, durationMs: 0 });
  }
  return new Promise((resolve) => {
    let settled = false;
    let status: number | undefined;
    const chunks: Buffer[] = [];
    let kept = 0;
    let controller: Dispatcher.DispatchController | null = null;
    let timedOut = false;
    const finish = (error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Streaming decode: a character cut in two at the 4 KiB limit is left out, not turned into U+FFFD.
      const responseBody = status === undefined && chunks.length === 0 ? null : new TextDecoder().decode(Buffer.concat(chunks), { stream: true });
      resolve({ status, responseBody, error, timedOut, durationMs: Math.round(performance.now() - started) });
    };
    const timer = setTimeout(() => {
      timedOut = true;
      finish(`timeout after ${req.timeoutMs} ms`);
      // Closes the connection: an answer half-read cannot be reused.
      controller?.abort(new Error('timeout'));
    }, req.timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (settled) c.abort(new Error('timeout'));
      },
      onResponseStart(_c, statusCode) {
        status = statusCode;
      },
      onResponseData(_c, chunk) {
        if (kept < RESPONSE_BODY_LIMIT) {
          const part = chunk.subarray(0, RESPONSE_BODY_LIMIT - kept);
          chunks.push(part);
          kept += part.length;
        }
        // Past the limit the rest is read and dropped, within the same deadline.
      },
      onResponseEnd() {
        finish();
      },
      onResponseError(_c, err) {
        const code = (err as NodeJS.ErrnoException).code;
        // Node's hint to run it with --use-system-ca is no help to an operator reading the attempt.
        finish(code === 'EPRIVATE' ? err.message : `${code ?? 'error'}: ${err.message.replace(NODE_CA_HINT, '')}${code === 'UND_ERR_SOCKET' && err.message === 'bad response' ? BAD_RESPONSE_HINT : ''}`);
      },
    };
    // undici reports a request it refuses (a header value it cannot send) through onResponseError too.
    agentFor(req.allowPrivate).dispatch({ origin: url.origin, path: url.pathname + url.search, method: 'POST', headers: req.headers, body: req.body }, handler);
  });
}
