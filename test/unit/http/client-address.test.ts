import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientAddress, clientKey, trustedProxySet } from '../../../src/http/internal/client-address.ts';

const LOOPBACK = '127.0.0.1,::1';

const fixtures: Array<{ description: string; peer: string | undefined; forwardedFor: string | null; trusted: string; client: string | undefined }> = [
  { description: 'no proxy header: the peer', peer: '203.0.113.7', forwardedFor: null, trusted: LOOPBACK, client: '203.0.113.7' },
  { description: 'an untrusted peer cannot name another client', peer: '203.0.113.7', forwardedFor: '198.51.100.1', trusted: LOOPBACK, client: '203.0.113.7' },
  { description: 'a trusted proxy names the client', peer: '127.0.0.1', forwardedFor: '198.51.100.1', trusted: LOOPBACK, client: '198.51.100.1' },
  { description: 'IPv4 in IPv6 form is the same peer', peer: '::ffff:127.0.0.1', forwardedFor: '198.51.100.1', trusted: LOOPBACK, client: '198.51.100.1' },
  { description: 'IPv6 loopback peer', peer: '::1', forwardedFor: '2001:db8::1', trusted: LOOPBACK, client: '2001:db8::1' },
  { description: 'what the client wrote left of the proxy\'s entry is ignored', peer: '127.0.0.1', forwardedFor: '10.9.9.9, 198.51.100.1', trusted: LOOPBACK, client: '198.51.100.1' },
  { description: 'a chain of trusted proxies is walked from the right', peer: '127.0.0.1', forwardedFor: '198.51.100.1, 10.0.0.5', trusted: '127.0.0.1,10.0.0.5', client: '198.51.100.1' },
  { description: 'a malformed entry ends the walk at the proxy that passed it', peer: '127.0.0.1', forwardedFor: 'spoofed, 10.0.0.5', trusted: '127.0.0.1,10.0.0.5', client: '10.0.0.5' },
  { description: 'a malformed last entry leaves the peer', peer: '127.0.0.1', forwardedFor: '198.51.100.1:4711', trusted: LOOPBACK, client: '127.0.0.1' },
  { description: 'an empty header leaves the peer', peer: '127.0.0.1', forwardedFor: '', trusted: LOOPBACK, client: '127.0.0.1' },
  { description: 'every entry a trusted proxy: the left-most', peer: '127.0.0.1', forwardedFor: '::1', trusted: LOOPBACK, client: '::1' },
  { description: 'nothing trusted: the peer even behind a proxy', peer: '127.0.0.1', forwardedFor: '198.51.100.1', trusted: '', client: '127.0.0.1' },
  { description: 'IPv6 compared in lower case', peer: '2001:DB8::5', forwardedFor: '198.51.100.1', trusted: '2001:db8::5', client: '198.51.100.1' },
  { description: 'no peer (in-process): none', peer: undefined, forwardedFor: '198.51.100.1', trusted: LOOPBACK, client: undefined },
];

for (const f of fixtures) {
  test(`client address: ${f.description}`, () => {
    assert.equal(clientAddress(f.peer, f.forwardedFor, trustedProxySet(f.trusted)), f.client);
  });
}

const keyFixtures: Array<{ description: string; address: string; key: string }> = [
  { description: 'IPv4: the address', address: '203.0.113.7', key: '203.0.113.7' },
  { description: 'IPv6: its /64', address: '2001:db8:1:2:3:4:5:6', key: '2001:db8:1:2::/64' },
  { description: 'IPv6 compressed, upper case, leading zeros: the same /64', address: '2001:0DB8:0001:0002::1', key: '2001:db8:1:2::/64' },
  { description: 'IPv6 compressed in the prefix', address: '2001:db8::1', key: '2001:db8:0:0::/64' },
  { description: 'IPv6 loopback', address: '::1', key: '0:0:0:0::/64' },
  { description: 'IPv6 with an IPv4 tail', address: '2001:db8:1:2::192.0.2.1', key: '2001:db8:1:2::/64' },
  { description: 'NAT64 (64:ff9b::/96): the IPv4 address it carries', address: '64:ff9b::192.0.2.1', key: '192.0.2.1' },
  { description: 'NAT64 in hex groups: the same IPv4 address', address: '64:FF9B::C000:201', key: '192.0.2.1' },
  { description: 'IPv4-mapped spelled in full: the IPv4 address', address: '0:0:0:0:0:ffff:1.2.3.4', key: '1.2.3.4' },
  { description: 'IPv4-mapped in hex groups: the IPv4 address', address: '::ffff:102:304', key: '1.2.3.4' },
  { description: 'the unspecified address', address: '::', key: '0:0:0:0::/64' },
  { description: 'IPv6 with a zone', address: 'fe80::1%eth0', key: 'fe80:0:0:0::/64' },
  { description: 'all eight groups, compressed at the end', address: '2001:db8:1:2:ffff::', key: '2001:db8:1:2::/64' },
];

for (const f of keyFixtures) {
  test(`client key: ${f.description}`, () => {
    assert.equal(clientKey(f.address), f.key);
  });
}

