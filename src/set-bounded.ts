/**
 * Sets `key` in `map`, first dropping its oldest entry (a Map keeps insertion
 * order) when it already holds `max` others: a cache bounded by count.
 */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  if (map.size >= max && !map.has(key)) map.delete(map.keys().next().value!);
  map.set(key, value);
}
