/**
 * The first name an object of `json` has twice, as a dotted path from the top
 * ("amount_sats", "metadata.order"), or null. JSON.parse keeps the last of
 * duplicates in silence: {"amount_sats":100,"amount_sats":200} would make a
 * 200-sat invoice whatever the sender meant. `json` must already have parsed;
 * names are compared as decoded ("a\u005fb" is "a_b").
 */
export function findDuplicateKey(json: string): string | null {
  // One frame per open object or array: the names seen (null for an array) and the path to it.
  const frames: Array<{ names: Set<string> | null; path: string }> = [];
  let lastName = '';
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; i < json.length && json.charCodeAt(i) !== 0x22; i++) {
        if (json.charCodeAt(i) === 0x5c /* \ */) {
          escaped = true;
          i++;
        }
      }
      const frame = frames.at(-1);
      if (!frame?.names || !isFollowedByColon(json, i + 1)) continue;
      const name = escaped ? (JSON.parse(json.slice(start, i + 1)) as string) : json.slice(start + 1, i);
      const path = frame.path ? `${frame.path}.${name}` : name;
      if (frame.names.has(name)) return path;
      frame.names.add(name);
      lastName = path;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const parent = frames.at(-1);
      // An object's value is named by the last name read in it; inside an array, by the array's path.
      const path = parent?.names ? lastName : (parent?.path ?? '');
      frames.push({ names: c === 0x7b ? new Set() : null, path });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      frames.pop();
    }
  }
  return null;
}

function isFollowedByColon(json: string, from: number): boolean {
  for (let i = from; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x3a /* : */) return true;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return false;
}
