import { isIP } from 'node:net';
import { ipv6Groups, translatedIpv4 } from '../../ip-address.ts';

// Which client a checkout stream counts against (docs/CHECKOUT.md). Behind a
// reverse proxy every TCP peer is the proxy, so a peer named in
// `trusted_proxies` is asked who it forwards for.

/** An IPv4 address in IPv6 form (`::ffff:127.0.0.1`, as a dual-stack socket shows it) in its plain form; IPv6 in lower case. */
export function normalizeIp(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped ? mapped[1]! : address.toLowerCase();
}

/** The `trusted_proxies` setting (comma-separated addresses, validated by the config) as a set. */
export function trustedProxySet(setting: string): ReadonlySet<string> {
  return new Set(setting.split(',').filter(Boolean).map(normalizeIp));
}

/**
 * The TCP peer, unless it is a trusted proxy: then the right-most
 * X-Forwarded-For entry that is not one. Entries left of it were written by
 * the client and prove nothing; an entry that is not a plain IP address ends
 * the walk at the proxy that passed it on. Undefined when there is no peer
 * (a request made in-process).
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | null, trusted: ReadonlySet<string>): string | undefined {
  if (peer === undefined) return undefined;
  let client = normalizeIp(peer);
  if (!forwardedFor) return client;
  const hops = forwardedFor.split(',');
  for (let i = hops.length - 1; i >= 0 && trusted.has(client); i--) {
    const hop = hops[i]!.trim();
    if (isIP(hop) === 0) break;
    client = normalizeIp(hop);
  }
  return client;
}

/**
 * What a client's streams count against: an IPv4 address, or an IPv6
 * address's /64. An IPv6 subscriber is given a /64 (or more) and may use any
 * address in it, so per address one client could take every stream slot. An
 * IPv6 address that carries an IPv4 one (IPv4-mapped in any spelling, or
 * NAT64's 64:ff9b::/96, as a translator in front writes them) counts as that
 * IPv4 address: its /64 would be every IPv4 client at once.
 */
export function clientKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = ipv6Groups(address);
  return translatedIpv4(groups) ?? `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}
