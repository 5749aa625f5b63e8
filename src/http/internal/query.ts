import { unknownName } from '../../domain/errors.ts';

/**
 * A route that takes no query parameter refuses one, by name: a parameter it
 * would ignore is a client's mistake, as an unknown field is (docs/DECISIONS.md).
 */
export function assertNoQuery(query: URLSearchParams): void {
  const [stray] = query.keys();
  if (stray !== undefined) throw unknownName('query parameter', stray);
}
