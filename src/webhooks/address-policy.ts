import { BlockList, isIP } from 'node:net';

// Webhook targets are merchant-supplied URLs, so by default Till refuses to
// connect to addresses that reach inside the box or the LAN (SSRF). The check
// runs on the address DNS resolved to, at connect time, so a hostname that
// resolves to 127.0.0.1 — or changes its answer after validation — is caught.
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

/** True for loopback, link-local, private, CGNAT, multicast and unspecified addresses (IPv4-mapped IPv6 too). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const ip = mapped ? mapped[1]! : address;
  const family = isIP(ip);
  if (family === 0) return true;
  return PRIVATE.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The URL's host when it is private on its face (an IP literal of a private
 * range, or localhost), else null: such a receiver is refused when it is
 * given, rather than at every attempt. A name resolving to a private address
 * is still caught at connect time.
 */
export function plainlyPrivateHost(url: string): string | null {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return host;
  return isIP(host) !== 0 && isPrivateAddress(host) ? host : null;
}
