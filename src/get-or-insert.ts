/**
 * The value `map` holds for `key`, or the one `make` gives, stored first.
 * What TC39's `Map.prototype.getOrInsertComputed` will do; Node 24 has not
 * shipped it yet.
 */
export function getOrInsert<K extends object, V>(map: WeakMap<K, V>, key: K, make: () => V): V;
export function getOrInsert<K, V>(map: Map<K, V>, key: K, make: () => V): V;
export function getOrInsert<K extends object, V>(map: Map<K, V> | WeakMap<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  // `has` only for a stored undefined: the common miss costs one lookup.
  if (value === undefined && !map.has(key)) map.set(key, (value = make()));
  return value as V;
}
