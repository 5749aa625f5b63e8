import { readFileSync } from 'node:fs';
import type { Agent } from 'undici';
import { readBoundedText } from '../read-bounded.ts';

// Bitcoin Core JSON-RPC over HTTP. Every answer is checked before use: a
// malformed one is an RpcProtocolError (logged by the watcher, never a crash).

/** bitcoind answered with an error object, e.g. -5 "Block not found". */
export class RpcError extends Error {
  override name = 'RpcError';
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** bitcoind could not be reached, refused our credentials, or is warming up. */
export class RpcUnavailableError extends Error {
  override name = 'RpcUnavailableError';
}

/** bitcoind answered something that is not what the call returns. */
export class RpcProtocolError extends Error {
  override name = 'RpcProtocolError';
}

export const RPC_IN_WARMUP = -28;
export const RPC_MISC_ERROR = -1;

export interface RpcCredentials {
  user: string;
  password: string;
}

export interface RpcClientOptions {
  url: string;
  /** Read at every request: bitcoind writes a new .cookie each time it starts. */
  credentials: () => RpcCredentials;
  timeoutMs?: number;
  /** The largest answer read (MAX_ANSWER_BYTES). */
  maxAnswerBytes?: number;
}

export function readCookieFile(path: string): RpcCredentials {
  const text = readFileSync(path, 'utf8').trim();
  const i = text.indexOf(':');
  if (i <= 0) throw new RpcUnavailableError(`${path} is not a bitcoind cookie file`);
  return { user: text.slice(0, i), password: text.slice(i + 1) };
}

export class RpcClient {
  readonly #url: string;
  readonly #credentials: () => RpcCredentials;
  readonly #timeoutMs: number;
  readonly #maxAnswerBytes: number;
  #id = 0;
  #inFlight = new AbortController();
  #agent: Agent | null = null;

  constructor(opts: RpcClientOptions) {
    this.#url = opts.url;
    this.#credentials = opts.credentials;
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
    this.#maxAnswerBytes = opts.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  }

  /** `timeoutMs` overrides the client's for a call known to take long (scantxoutset). */
  async call(method: string, params: unknown[] = [], { timeoutMs = this.#timeoutMs } = {}): Promise<unknown> {
    const [answer] = await this.#post([{ method, params }], timeoutMs);
    if (answer!.error) throw answer!.error;
    return answer!.result;
  }

  /** Fails the calls under way at once (a stopping watcher must not wait out a 30-minute scan); later calls go ahead. */
  abortCalls(): void {
    this.#inFlight.abort();
    this.#inFlight = new AbortController();
  }

  /**
   * undici's own fetch, with no limit of its own on the wait for an answer:
   * Node's fetch gives up on headers after 300 s, and a scan takes longer
   * (the call's AbortSignal is the deadline). Loaded with the first call: a
   * till without a node never needs it.
   */
  async #fetch(url: string, init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal }) {
    const undici = await import('undici');
    this.#agent ??= new undici.Agent({ headersTimeout: 0, bodyTimeout: 0 });
    return undici.fetch(url, { ...init, dispatcher: this.#agent });
  }

  /** Several calls in one HTTP request; each answer is a result or an RpcError. */
  async batch(calls: Array<{ method: string; params: unknown[] }>): Promise<Array<unknown | RpcError>> {
    if (calls.length === 0) return [];
    return (await this.#post(calls, this.#timeoutMs)).map((a) => a.error ?? a.result);
  }

  async #post(calls: Array<{ method: string; params: unknown[] }>, timeoutMs: number): Promise<Array<{ result: unknown; error: RpcError | null }>> {
    let creds: RpcCredentials;
    try {
      creds = this.#credentials();
    } catch (err) {
      throw new RpcUnavailableError(`bitcoind credentials: ${(err as Error).message}`);
    }
    const ids = calls.map(() => ++this.#id);
    const payload = calls.map((c, i) => ({ jsonrpc: '1.0', id: ids[i], method: c.method, params: c.params }));
    let res: { status: number; body: AsyncIterable<Uint8Array> | null };
    try {
      res = await this.#fetch(this.#url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Basic ${Buffer.from(`${creds.user}:${creds.password}`).toString('base64')}`,
        },
        body: JSON.stringify(payload),
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), this.#inFlight.signal]),
      });
    } catch (err) {
      throw new RpcUnavailableError(`bitcoind RPC at ${this.#url} is unreachable: ${(err as Error).cause ?? (err as Error).message}`);
    }
    if (res.status === 401 || res.status === 403) throw new RpcUnavailableError(`bitcoind refused the RPC credentials (HTTP ${res.status})`);
    const text = await readAnswer(res.body, calls[0]!.method, this.#maxAnswerBytes);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      // Core answers a full work queue (503) and some other refusals in plain text: say what it said.
      throw new RpcUnavailableError(`bitcoind RPC answered HTTP ${res.status} without JSON${text ? `: ${text.slice(0, 200).trim()}` : ''}`);
    }
    if (!Array.isArray(body) || body.length !== calls.length) throw new RpcProtocolError('batch answer does not match the request');
    const byId = new Map<unknown, { result?: unknown; error?: unknown }>(body.map((a) => [a?.id, a]));
    return ids.map((id) => {
      const a = byId.get(id);
      if (!a || typeof a !== 'object') throw new RpcProtocolError(`no answer for request ${id}`);
      if (a.error) {
        const e = a.error as { code?: unknown; message?: unknown };
        const err = new RpcError(typeof e.code === 'number' ? e.code : RPC_MISC_ERROR, typeof e.message === 'string' ? e.message : 'unknown error');
        if (err.code === RPC_IN_WARMUP) throw new RpcUnavailableError(`bitcoind is starting: ${err.message}`);
        return { result: null, error: err };
      }
      return { result: a.result, error: null };
    });
  }
}

/**
 * The largest answer read: a mainnet node's whole mempool with entry times
 * (getrawmempool true) is ~100-200 MB when full; a node answering more is not
 * read to the end, which would take the till's memory with it.
 */
export const MAX_ANSWER_BYTES = 512 * 1024 * 1024;

/** The answer's text, read within MAX_ANSWER_BYTES; a read cut short (the deadline, a lost connection) says so. */
async function readAnswer(body: AsyncIterable<Uint8Array> | null, method: string, limit: number): Promise<string> {
  let text: string | null;
  try {
    text = await readBoundedText(body, limit);
  } catch (err) {
    throw new RpcUnavailableError(`bitcoind's answer to ${method} was cut short: ${(err as Error).message}`);
  }
  if (text === null) throw new RpcProtocolError(`bitcoind's answer to ${method} is larger than ${limit / 1024 / 1024} MiB: not read`);
  return text;
}

// Answer checks: one per shape Till reads.

export function expectObject(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new RpcProtocolError(`${what}: expected an object`);
  return v as Record<string, unknown>;
}

export function expectHash(v: unknown, what: string): string {
  if (typeof v !== 'string' || !/^[0-9a-f]{64}$/.test(v)) throw new RpcProtocolError(`${what}: expected a 64-hex hash`);
  return v;
}

export function expectHex(v: unknown, what: string): string {
  if (typeof v !== 'string' || v.length % 2 !== 0 || !/^[0-9a-f]*$/.test(v)) throw new RpcProtocolError(`${what}: expected hex`);
  return v;
}

export function expectInteger(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new RpcProtocolError(`${what}: expected a non-negative integer`);
  return v;
}

export function expectBoolean(v: unknown, what: string): boolean {
  if (typeof v !== 'boolean') throw new RpcProtocolError(`${what}: expected true or false`);
  return v;
}
