import { BlockList, isIP } from 'node:net';
import { dotted, ipv6Groups, translatedIpv4 } from '../ip-address.ts';

// Webhook targets are merchant-supplied URLs, so by default Till refuses to
// connect to addresses that reach inside the box or the LAN (SSRF). The check
// runs on the address DNS resolved to, at connect time, so a hostname that
// resolves to 127.0.0.1 — or changes its answer after validation — is caught.
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  // Unspecified, loopback and the deprecated IPv4-compatible ::a.b.c.d.
  ['::', 96], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
  // NAT64 for local use (RFC 8215): translates to addresses of the operator's choosing, private ones too.
  ['64:ff9b:1::', 48],
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

/**
 * True for loopback, link-local, private, CGNAT, multicast and unspecified
 * addresses, and for IPv6 addresses that reach one of the IPv4 ones: IPv4-mapped,
 * NAT64 (64:ff9b::/96: behind a DNS64 resolver a name with only a private A
 * record gets such an address) and 6to4 (2002::/16).
 */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return PRIVATE.check(address, 'ipv4');
  const groups = ipv6Groups(address);
  const ipv4 = translatedIpv4(groups) ?? (groups[0] === 0x2002 ? dotted(groups[1]!, groups[2]!) : null);
  return ipv4 !== null ? PRIVATE.check(ipv4, 'ipv4') : PRIVATE.check(address, 'ipv6');
}

/**
 * The URL's host when it is private on its face (an IP literal of a private
 * range, or localhost), else null: such a receiver is refused when it is
 * given, rather than at every attempt. A name resolving to a private address
 * is still caught at connect time.
 */
export function plainlyPrivateHost(url: string): string | null {
  // A fully qualified name's trailing dot names the same host (localhost. is localhost).
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return host;
  return isIP(host) !== 0 && isPrivateAddress(host) ? host : null;
}
