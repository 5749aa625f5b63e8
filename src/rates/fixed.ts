// `fixed:<usd>`: a rate set by the operator, for air-gapped boxes and tests. It
// never changes, so it is never stale (see RateService.current).
import { parseRateToCents } from '../domain/money.ts';
import type { RateProvider } from './provider.ts';

const FIXED_USD = /^(0|[1-9]\d*)(?:\.\d{1,2})?$/;

/** `usd` is the part after `fixed:`, e.g. "65000" or "65000.50". */
export function createFixedProvider(usd: string): RateProvider {
  // An operator typing cents-and-more is a typo, not something to round away.
  if (!FIXED_USD.test(usd)) {
    throw new Error(`fixed rate ${JSON.stringify(usd)} must be USD per BTC with at most 2 decimals, e.g. fixed:65000.50`);
  }
  let cents: number;
  try {
    cents = parseRateToCents(usd);
  } catch (error) {
    throw new Error(`fixed rate: ${(error as Error).message}`);
  }
  return { name: 'fixed', fixedCentsPerBtc: cents, fetchRate: async () => cents };
}
