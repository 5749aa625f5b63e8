// One GET to a price provider: bounded in time and size, and every way it can
// go wrong becomes an Error that names the provider. Shared by the HTTP providers.
import { parseRateToCents } from '../domain/money.ts';
import { readBoundedText } from '../read-bounded.ts';
import type { RateProvider } from './provider.ts';

export const DEFAULT_TIMEOUT_MS = 5_000;

/** A ticker answer is a few hundred bytes; anything this big is not one. */
const MAX_BODY_BYTES = 64 * 1024;

export interface HttpProviderOptions {
  /** Origin to call instead of the provider's public one (tests use a local fake). */
  baseUrl?: string;
  /** Per-request limit; the caller's signal can end it sooner. */
  timeoutMs?: number;
}

export async function fetchProviderJson(
  name: string,
  url: string,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<unknown> {
  const limited = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  let status: number;
  let text: string | null = null;
  try {
    const response = await fetch(url, {
      signal: limited,
      headers: { accept: 'application/json', 'user-agent': 'till' },
    });
    status = response.status;
    if (status === 200) text = await readBoundedText(response.body, MAX_BODY_BYTES);
    else await response.body?.cancel();
  } catch (error) {
    if (signal.aborted) throw new Error(`${name}: request cancelled`, { cause: error });
    if (limited.aborted) throw new Error(`${name}: no answer within ${timeoutMs} ms`, { cause: error });
    throw new Error(`${name}: request failed (${describeError(error)})`, { cause: error });
  }
  if (status !== 200) throw new Error(`${name}: HTTP ${status} from ${url}`);
  if (text === null) throw new Error(`${name}: answer larger than ${MAX_BODY_BYTES} bytes`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${name}: answer is not JSON`);
  }
}

/** A provider's price field as cents; any defect is that provider's error. */
export function parseProviderPrice(name: string, value: unknown, field: string): number {
  if (typeof value !== 'string') throw new Error(`${name}: ${field} is not a numeric string`);
  try {
    return parseRateToCents(value);
  } catch (error) {
    throw new Error(`${name}: ${field}: ${(error as Error).message}`);
  }
}

/** True for a plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The provider's origin without a trailing slash; rejects anything but http(s). */
export function resolveBaseUrl(name: string, baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new Error(`${name}: base URL ${JSON.stringify(baseUrl)} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new Error(`${name}: base URL must be http(s), got ${url.protocol}`);
  }
  return baseUrl.replace(/\/+$/, '');
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}

export interface HttpProviderSpec {
  name: string;
  defaultBaseUrl: string;
  /** Path and query of the ticker under the base URL. */
  path: string;
  /** Picks the price out of the parsed answer, throwing on any other shape. */
  readPrice(body: unknown, name: string): number;
}

/** A public-ticker provider: one GET, the answer checked by readPrice. */
export function defineHttpProvider(spec: HttpProviderSpec, options: HttpProviderOptions = {}): RateProvider {
  const { name } = spec;
  const url = `${resolveBaseUrl(name, options.baseUrl ?? spec.defaultBaseUrl)}${spec.path}`;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    name,
    async fetchRate(signal) {
      return spec.readPrice(await fetchProviderJson(name, url, signal, timeoutMs), name);
    },
  };
}
