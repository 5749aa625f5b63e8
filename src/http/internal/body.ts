import type { Readable } from 'node:stream';
import type { H3Event } from 'h3';
import { ApiError, invalidField, unknownName } from '../../domain/errors.ts';
import { findDuplicateKey } from './duplicate-key.ts';
import { assertNoQuery } from './query.ts';

export const MAX_JSON_BODY_BYTES = 64 * 1024;
/**
 * Deepest nesting a body may have. Till's bodies need 2; 64 KiB of brackets
 * nest 32,000 deep, which overflows the stack of recursive walkers such as
 * JSON.stringify (a 500 instead of a 400).
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Reads a JSON object body: Content-Type must be application/json, the size is
 * bounded (413 before buffering more than the limit), and anything that is not
 * a JSON object is a validation_error. A query parameter beside it is refused
 * too: fields go in the body, and one put in the URL by mistake must not be
 * ignored (docs/DECISIONS.md). Never throws anything but ApiError.
 */
export async function readJsonObject(event: H3Event, maxBytes = MAX_JSON_BODY_BYTES): Promise<{ value: Record<string, unknown>; raw: string }> {
  assertNoQuery(event.url.search);
  assertJsonType(event);
  const raw = await readBody(event, maxBytes);
  return { value: parseJsonObject(raw), raw };
}

/** Whether a Content-Type says JSON (any parameters, such as charset, after it). */
export function isJsonType(type: string): boolean {
  return /^application\/json\s*(;|$)/i.test(type);
}

function assertJsonType(event: H3Event): void {
  if (!isJsonType(event.req.headers.get('content-type') ?? '')) {
    throw new ApiError('unsupported_media_type', 'the request body must be JSON with Content-Type: application/json');
  }
}

async function readBody(event: H3Event, maxBytes: number): Promise<string> {
  const declared = Number(event.req.headers.get('content-length') ?? '0');
  if (declared > maxBytes) throw tooLarge(maxBytes);
  return readLimited(event, maxBytes);
}

function parseJsonObject(raw: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ApiError('validation_error', 'the request body is not valid JSON', { param: 'body' });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ApiError('validation_error', 'the request body must be a JSON object', { param: 'body' });
  }
  if (exceedsDepth(value, MAX_JSON_DEPTH)) {
    throw new ApiError('validation_error', `the request body is nested more than ${MAX_JSON_DEPTH} levels deep`, { param: 'body' });
  }
  const duplicate = findDuplicateKey(raw);
  if (duplicate !== null) {
    // Cut to 64 characters as an unknown field's name is (the client chose its length).
    const shown = duplicate.slice(0, 64);
    throw invalidField(shown, `the request body names "${shown}" twice; send each field once`);
  }
  return value as Record<string, unknown>;
}

/**
 * For an action that takes no parameters (cancel, rotate, test): no body, an
 * empty one, or `{}`. Anything else is refused as a body would be, a field by
 * name: a parameter sent to such a route must not be ignored in silence.
 */
export async function readNoParams(event: H3Event): Promise<void> {
  assertNoQuery(event.url.search);
  const raw = await readBody(event, MAX_JSON_BODY_BYTES);
  if (raw === '') return;
  assertJsonType(event);
  const field = Object.keys(parseJsonObject(raw))[0];
  if (field !== undefined) throw unknownName('field', field);
}

/** Whether objects and arrays nest deeper than max; iterative, so any depth is safe to ask about. */
function exceedsDepth(value: object, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [v, depth] = item;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

async function readLimited(event: H3Event, maxBytes: number): Promise<string> {
  // Over a socket the Node request is read directly: wrapping it in a web
  // ReadableStream first cost more than parsing the JSON.
  const nodeReq = event.runtime?.node?.req;
  return decodeUtf8(nodeReq ? await readNodeBody(nodeReq, maxBytes) : await readWebBody(event.req.body, maxBytes));
}

/** A body read in full (a direct POST's, src/http/internal/direct-post.ts) as a JSON object, refused as readJsonObject refuses it. */
export function parseJsonObjectBytes(bytes: Uint8Array): Record<string, unknown> {
  return parseJsonObject(decodeUtf8(bytes));
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError('validation_error', 'the request body is not valid UTF-8', { param: 'body' });
  }
}

const tooLarge = (maxBytes: number) => new ApiError('payload_too_large', `the request body must be at most ${maxBytes} bytes`);
const unreadable = () => new ApiError('validation_error', 'the request body could not be read', { param: 'body' });

/** A Node request's body, at most maxBytes (413 past them); a client gone before its end is a validation_error. */
export function readNodeBody(req: Readable & { complete: boolean }, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err: ApiError | null) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (err) reject(err);
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) settle(tooLarge(maxBytes));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(null);
    const onError = () => settle(unreadable());
    // The client went away before the body was complete.
    const onClose = () => settle(req.complete ? null : unreadable());
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

async function readWebBody(stream: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Buffer> {
  if (!stream) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw tooLarge(maxBytes);
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw unreadable();
  } finally {
    reader.releaseLock();
  }
  return Buffer.concat(chunks);
}
