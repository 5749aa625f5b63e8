import { unknownName } from '../../domain/errors.ts';

/**
 * A route that takes no query parameter refuses one, by name: a parameter it
 * would ignore is a client's mistake, as an unknown field is (docs/DECISIONS.md).
 */
export function assertNoQuery(query: string | URLSearchParams): void {
  // A string is the URL's search part: parsed only when there is one (the common case has none).
  if (query === '') return;
  const [stray] = (typeof query === 'string' ? new URLSearchParams(query) : query).keys();
  if (stray !== undefined) throw unknownName('query parameter', stray);
}
