import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { H3Event } from 'h3';
import { embeddedAsset, IN_BINARY } from '../embedded.ts';

// The one place static files are read. Paths are resolved from this module,
// never the working directory, and every read goes through readAsset(name),
// so the single binary reads its embedded copy instead (src/embedded.ts).
const ASSETS_DIR = new URL('../../assets/', import.meta.url);

const CONTENT_TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  svg: 'image/svg+xml',
};

// Lower-case names in lower-case folders: no dots but the extension's, so no
// way out of the assets folder.
const ASSET_NAME = /^[a-z0-9][a-z0-9-]*(?:\/[a-z0-9][a-z0-9-]*)*\.(html|css|js|svg)$/;

export interface Asset {
  body: Uint8Array<ArrayBuffer>;
  contentType: string;
  /** Strong validator of the body. */
  etag: string;
}

const cache = new Map<string, Asset>();

/** An asset by name relative to assets/ ("checkout/index.html"), read once; null when there is none. */
export function readAsset(name: string): Asset | null {
  const cached = cache.get(name);
  if (cached) return cached;
  const ext = ASSET_NAME.exec(name)?.[1];
  if (!ext) return null;
  const body = IN_BINARY ? embeddedAsset(name) : readAssetFile(name);
  if (!body) return null;
  const asset = toAsset(body, CONTENT_TYPES[ext]!);
  cache.set(name, asset);
  return asset;
}

function readAssetFile(name: string): Uint8Array<ArrayBuffer> | null {
  try {
    return new Uint8Array(readFileSync(new URL(name, ASSETS_DIR)));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Wraps generated content (a QR code) so it is served like a file. */
export function toAsset(body: Uint8Array<ArrayBuffer> | string, contentType: string): Asset {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
  return { body: bytes, contentType, etag };
}

/**
 * Sends the asset: revalidated on every use (no-cache with an ETag, so an
 * upgrade shows at once and an unchanged file costs a 304), never sniffed as
 * another type. Headers go on event.res and the bytes are returned, which
 * keeps srvx on its fast path (a Response object would be streamed).
 */
export function sendAsset(event: H3Event, asset: Asset, opts: { status?: number; headers?: Record<string, string> } = {}): Uint8Array | Response {
  const headers = event.res.headers;
  headers.set('content-type', asset.contentType);
  headers.set('cache-control', 'no-cache');
  headers.set('etag', asset.etag);
  headers.set('x-content-type-options', 'nosniff');
  for (const [k, v] of Object.entries(opts.headers ?? {})) headers.set(k, v);
  const status = opts.status ?? 200;
  if (status === 200 && noneMatch(event.req.headers.get('if-none-match'), asset.etag)) return new Response(null, { status: 304 });
  event.res.status = status;
  return asset.body;
}

/** If-None-Match (RFC 9110 13.1.2): `*`, or a list of entity tags compared weakly (a compressing proxy marks its copy W/). */
function noneMatch(header: string | null, etag: string): boolean {
  if (header === null) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
