import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isPrivateAddress, plainlyPrivateHost } from '../../../src/webhooks/address-policy.ts';

// Where a webhook may be delivered unless webhooks.allow_private is set: the
// address DNS gave (isPrivateAddress) and a URL's host on its face.
const fixtures = {
  private: [
    '127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255',
    '::', '::1', 'fd00::1', 'fe80::1', 'fe80::1%eth0', 'fec0::1', 'ff02::1',
    // IPv4-mapped, in each spelling.
    '::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:a00:1', '::FFFF:192.168.0.1',
    // The deprecated IPv4-compatible form.
    '::127.0.0.1', '::a00:1',
    // NAT64, well-known prefix, carrying a private IPv4 address (a DNS64 answer for a name with a private A record).
    '64:ff9b::a00:1', '64:ff9b::127.0.0.1', '64:ff9b::a9fe:a9fe',
    // NAT64 for local use (RFC 8215): whatever it translates to.
    '64:ff9b:1::1', '64:ff9b:1:ffff::8.8.8.8',
    // 6to4 of a private IPv4 address.
    '2002:a00:1::1', '2002:c0a8:101::',
    'not an address',
  ],
  public: [
    '8.8.8.8', '1.1.1.1', '93.184.215.14',
    '2606:4700:4700::1111', '2001:db8::1',
    '::ffff:8.8.8.8', '64:ff9b::808:808', '64:ff9b::8.8.8.8', '2002:808:808::1',
  ],
};

test('private addresses: refused', () => {
  for (const address of fixtures.private) assert.equal(isPrivateAddress(address), true, address);
});

test('public addresses: allowed', () => {
  for (const address of fixtures.public) assert.equal(isPrivateAddress(address), false, address);
});

test('a URL whose host is plainly private is refused when given, in any spelling the URL parser keeps', () => {
  for (const url of ['http://[64:ff9b::a00:1]/h', 'http://[::ffff:127.0.0.1]/h', 'http://[2002:a00:1::1]/h', 'http://0x7f.1/h', 'http://localhost/h', 'http://shop.localhost/h', 'http://LOCALHOST./h', 'http://shop.localhost./h']) {
    assert.notEqual(plainlyPrivateHost(url), null, url);
  }
  for (const url of ['https://shop.example/h', 'http://[64:ff9b::808:808]/h', 'http://8.8.8.8/h']) assert.equal(plainlyPrivateHost(url), null, url);
});
