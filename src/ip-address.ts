// IPv6 addresses read group by group, for the two places that judge an
// address: the webhook SSRF policy and the checkout streams' per-client count.

/** The eight 16-bit groups of an IPv6 address (one isIP accepts). */
export function ipv6Groups(address: string): number[] {
  const plain = address.split('%')[0]!;
  const toGroups = (part: string): number[] => {
    if (part === '') return [];
    return part.split(':').flatMap((group) => {
      if (!group.includes('.')) return [Number.parseInt(group, 16)];
      // An IPv4 tail (::ffff:192.0.2.1) is the last two groups.
      const [a, b, c, d] = group.split('.').map(Number) as [number, number, number, number];
      return [(a << 8) | b, (c << 8) | d];
    });
  };
  const [head, tail] = plain.split('::') as [string, string | undefined];
  const left = toGroups(head);
  const right = tail === undefined ? [] : toGroups(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The IPv4 address an IPv6 one stands for, in dotted form: IPv4-mapped
 * (::ffff:0:0/96, in any spelling) or NAT64's well-known prefix (64:ff9b::/96,
 * as a translator writes an IPv4 host). Else null.
 */
export function translatedIpv4(groups: readonly number[]): string | null {
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const mapped = zeros(0, 5) && groups[5] === 0xffff;
  const nat64 = groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6);
  return mapped || nat64 ? dotted(groups[6]!, groups[7]!) : null;
}

/** Two 16-bit groups as a dotted IPv4 address. */
export function dotted(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}
