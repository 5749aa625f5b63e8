import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isPrivateAddress } from './address-policy.ts';

export const RESPONSE_BODY_LIMIT = 4096;

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
  /** First 4 KiB of the response body. */
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
        const e = Object.assign(new Error(`${hostname} resolves to a private address (${list[0]?.address ?? 'none'}); allow it with webhooks.allow_private`), { code: 'EPRIVATE' });
        return callback(e, '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

// Connections are kept alive between attempts to the same receiver; every new
// socket goes through the guarded lookup, so the address check still applies.
const agents = new Map<string, http.Agent>();
function agentFor(protocol: string, allowPrivate: boolean): http.Agent {
  const key = `${protocol}${allowPrivate}`;
  let agent = agents.get(key);
  if (!agent) {
    const opts = { keepAlive: true, maxSockets: 32, maxFreeSockets: 32, timeout: 30_000 };
    agent = protocol === 'https:' ? new https.Agent(opts) : new http.Agent(opts);
    agents.set(key, agent);
  }
  return agent;
}

/**
 * One webhook attempt: POST, no redirects followed, one deadline for the whole
 * exchange (connect, headers and body), at most 4 KiB of the answer kept.
 * Never throws: every outcome is a SendResult.
 */
export function sendWebhook(req: SendRequest): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    let status: number | undefined;
    const chunks: Buffer[] = [];
    let kept = 0;
    const finish = (error?: string, timedOut = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const responseBody = status === undefined && chunks.length === 0 ? null : Buffer.concat(chunks).toString('utf8');
      resolve({ status, responseBody, error, timedOut, durationMs: elapsed() });
      // A complete answer leaves the socket to the pool; anything else closes it.
      if (error || timedOut) request.destroy();
    };
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      resolve({ responseBody: null, error: 'invalid URL', timedOut: false, durationMs: 0 });
      return;
    }
    const client = url.protocol === 'https:' ? https : http;
    const hostIsLiteral = url.hostname.replace(/^\[|\]$/g, '');
    const request = client.request(url, {
      method: 'POST',
      headers: { ...req.headers, 'content-length': Buffer.byteLength(req.body).toString() },
      lookup: guardedLookup(req.allowPrivate),
      agent: agentFor(url.protocol, req.allowPrivate),
    });
    const timer = setTimeout(() => finish(`timeout after ${req.timeoutMs} ms`, true), req.timeoutMs);
    request.on('response', (res) => {
      status = res.statusCode;
      res.on('data', (chunk: Buffer) => {
        if (kept < RESPONSE_BODY_LIMIT) {
          const part = chunk.subarray(0, RESPONSE_BODY_LIMIT - kept);
          chunks.push(part);
          kept += part.length;
        }
        // Past the limit the rest is read and dropped, within the same deadline.
      });
      res.on('end', () => finish());
      res.on('error', (err) => finish(err.message));
    });
    request.on('error', (err) => finish((err as NodeJS.ErrnoException).code === 'EPRIVATE' ? err.message : `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${err.message}`));
    // A literal IP skips DNS, so it is checked here.
    if (!req.allowPrivate && /^[\d.]+$|:/.test(hostIsLiteral) && isPrivateAddress(hostIsLiteral)) {
      finish(`${hostIsLiteral} is a private address; allow it with webhooks.allow_private`);
      return;
    }
    request.end(req.body);
  });
}
