import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, DEFAULTS, describeConfig, loadConfig, unknownTillVariables } from '../../../src/config.ts';
import { tempDir } from '../../helpers/temp.ts';

test('defaults listen on loopback with durable commits', (t) => {
  const dir = tempDir(t);
  const c = loadConfig({ env: { TILL_DATA_DIR: dir } });
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.port, DEFAULTS.port);
  assert.equal(c.synchronous, 'FULL');
  assert.equal(c.network, 'main');
  assert.equal(c.dataDir, dir);
});

test('precedence: defaults < demo < till.toml < env < flags', (t) => {
  const dir = tempDir(t);
  assert.equal(loadConfig({ env: { TILL_DATA_DIR: dir }, demo: true }).network, 'regtest');
  assert.equal(loadConfig({ env: { TILL_DATA_DIR: dir }, demo: true }).allowPrivateCallbacks, true, 'the demo takes a receiver on localhost');
  assert.equal(loadConfig({ env: { TILL_DATA_DIR: dir } }).allowPrivateCallbacks, false);
  writeFileSync(join(dir, 'till.toml'), 'port = 9001\nnetwork = "signet"\nrates = "fixed:70000"\n[bitcoind]\nrpc_user = "alice"\n');
  const fromFile = loadConfig({ env: { TILL_DATA_DIR: dir }, demo: true });
  assert.equal(fromFile.port, 9001);
  assert.equal(fromFile.network, 'signet');
  assert.equal(fromFile.rpcUser, 'alice');
  const fromEnv = loadConfig({ env: { TILL_DATA_DIR: dir, TILL_PORT: '9002', TILL_NETWORK: 'test' } });
  assert.equal(fromEnv.port, 9002);
  assert.equal(fromEnv.network, 'test');
  assert.equal(fromEnv.rates, 'fixed:70000');
  const fromFlag = loadConfig({ env: { TILL_DATA_DIR: dir, TILL_PORT: '9002' }, flags: { port: '9003' } });
  assert.equal(fromFlag.port, 9003);
});

test('trusted proxies: loopback by default, a list of addresses, or none', (t) => {
  const dir = tempDir(t);
  assert.equal(loadConfig({ env: { TILL_DATA_DIR: dir } }).trustedProxies, '127.0.0.1,::1');
  assert.equal(loadConfig({ env: { TILL_DATA_DIR: dir, TILL_TRUSTED_PROXIES: ' 10.0.0.5 , 2001:db8::1 ' } }).trustedProxies, '10.0.0.5,2001:db8::1');
  assert.equal(loadConfig({ env: { TILL_DATA_DIR: dir, TILL_TRUSTED_PROXIES: '' } }).trustedProxies, '');
});

test('a JSON config file works too', (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'till.json'), JSON.stringify({ port: 9100, bitcoind: { rpc_password: 'pw' } }));
  const c = loadConfig({ env: { TILL_DATA_DIR: dir } });
  assert.equal(c.port, 9100);
  assert.equal(c.rpcPassword, 'pw');
});

test('secrets are masked when the config is printed', (t) => {
  const dir = tempDir(t);
  const c = loadConfig({ env: { TILL_DATA_DIR: dir, TILL_RPC_PASSWORD: 'hunter2-secret' } });
  const shown = describeConfig(c);
  assert.equal(shown['bitcoind.rpc_password'], '********');
  assert.ok(!JSON.stringify(shown).includes('hunter2'));
  assert.equal(describeConfig(loadConfig({ env: { TILL_DATA_DIR: dir } }))['bitcoind.rpc_password'], '', 'an unset secret shows as unset');
});

const invalid: Array<[string, Record<string, string>, RegExp]> = [
  ['port out of range', { TILL_PORT: '70000' }, /TILL_PORT must be an integer from 0 to 65535/],
  ['port not a number', { TILL_PORT: '80a' }, /TILL_PORT/],
  ['unknown network', { TILL_NETWORK: 'mainnet' }, /TILL_NETWORK must be one of main, test, signet, regtest/],
  ['bad synchronous', { TILL_SYNCHRONOUS: 'OFF' }, /TILL_SYNCHRONOUS/],
  ['bad public url', { TILL_PUBLIC_URL: 'ftp://x' }, /TILL_PUBLIC_URL must be an http\(s\) URL/],
  ['bad zmq endpoint', { TILL_ZMQ: 'ipc:///tmp/x' }, /TILL_ZMQ/],
  ['bad boolean', { TILL_ALLOW_PRIVATE_CALLBACKS: 'yes' }, /true or false/],
  ['a trusted proxy that is not an IP address', { TILL_TRUSTED_PROXIES: '127.0.0.1,proxy.local' }, /TILL_TRUSTED_PROXIES must be IP addresses separated by commas \(got "proxy.local"\)/],
  ['a trusted proxy with a port', { TILL_TRUSTED_PROXIES: '10.0.0.5:443' }, /TILL_TRUSTED_PROXIES/],
  ['a misspelt rate source', { TILL_RATES: 'krakn' }, /TILL_RATES: rate sources: unknown source "krakn"/],
  ['a fixed rate that is not a price', { TILL_RATES: 'fixed:abc' }, /TILL_RATES: /],
  ['an empty rate source list', { TILL_RATES: '' }, /TILL_RATES: .*empty entry/],
  ['an RPC URL with a password in it (never sent, and config show would print it)', { TILL_RPC_URL: 'http://alice:s3cret@127.0.0.1:8332' }, /^TILL_RPC_URL must not hold a user name or password \(bitcoind\.rpc_user[^3]*$/],
  ['a public URL with a user in it', { TILL_PUBLIC_URL: 'https://bob@pay.example.com' }, /^TILL_PUBLIC_URL must not hold a user name or password$/],
  ['an unparsable RPC URL with a password in it: echoed without it', { TILL_RPC_URL: 'http://rpc:hunter2@127.0.0.1:83329' }, /^TILL_RPC_URL must be an http\(s\) URL \(got "http:\/\/…@127\.0\.0\.1:83329"\)$/],
];
test('invalid: an empty data dir (variable or flag) is refused, never taken as the working directory', () => {
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: '' } }), (e: Error) => e instanceof ConfigError && /^TILL_DATA_DIR must not be empty/.test(e.message));
  assert.throws(() => loadConfig({ env: {}, flags: { dataDir: ' ' } }), (e: Error) => e instanceof ConfigError && /^--data-dir must not be empty/.test(e.message));
});

for (const [name, env, message] of invalid) {
  test(`invalid: ${name}`, (t) => {
    const dir = tempDir(t);
    assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir, ...env } }), (e: Error) => e instanceof ConfigError && message.test(e.message));
  });
}

test('invalid: a key with a dot in its own name (quoted in TOML, flat in JSON) is unknown, with the table form to write', (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'till.toml'), '"bitcoind.rpc_url" = "http://127.0.0.1:8332"\n');
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), /till\.toml: unknown setting "bitcoind\.rpc_url"; a setting like bitcoind\.enabled is a table/);
  rmSync(join(dir, 'till.toml'));
  writeFileSync(join(dir, 'till.json'), JSON.stringify({ network: 'regtest', webhooks: { 'x.y': 1 }, 'webhooks.allow_private': true }));
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), /till\.json: unknown setting webhooks\."x\.y", "webhooks\.allow_private"/);
  writeFileSync(join(dir, 'till.json'), JSON.stringify({ network: 'regtest', webhooks: { allow_private: true } }));
  assert.equal(loadConfig({ env: { TILL_DATA_DIR: dir } }).allowPrivateCallbacks, true, 'the table form is read');
});

test('invalid: data_dir in the file, which is found through the data dir itself, is refused rather than ignored', (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'till.toml'), 'data_dir = "/srv/till"\n');
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), (e: Error) => e instanceof ConfigError && /till\.toml: data_dir cannot be set in the file.*--data-dir or TILL_DATA_DIR/.test(e.message));
});

test('invalid: unknown key or unparsable till.toml names the file', (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'till.toml'), 'prot = 8080\n');
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), /till\.toml: unknown setting "prot"/);
  writeFileSync(join(dir, 'till.toml'), 'port = = 1\n');
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), /till\.toml could not be read/);
  writeFileSync(join(dir, 'till.toml'), 'port = "eighty"\n');
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), /till\.toml: port must be an integer/);
});

test('invalid: an unparsable file is named with the place of the mistake, never the text around it (a password may be there)', (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'till.toml'), '[bitcoind]\nrpc_password = "hunter2SECRET"\ncookie_file = /x\n');
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), (e: Error) => /till\.toml could not be read: Invalid TOML document: invalid value \(line 3, column \d+\)$/.test(e.message) && !e.message.includes('hunter2'));
  rmSync(join(dir, 'till.toml'));
  writeFileSync(join(dir, 'till.json'), '{"bitcoind": {"rpc_password": hunter2SECRET}}');
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), (e: Error) => /till\.json could not be read: Unexpected token 'h': not valid JSON$/.test(e.message) && !e.message.includes('hunter2'));
  writeFileSync(join(dir, 'till.json'), '{"bitcoind": {"rpc_password": "hunter2SECRET",}}');
  assert.throws(() => loadConfig({ env: { TILL_DATA_DIR: dir } }), (e: Error) => /till\.json could not be read: .*\(line 1 column \d+\)$/.test(e.message) && !e.message.includes('hunter2'));
});

test('TILL_ variables that name no setting are found, to be warned of; the settings\' own and the binary\'s cache folder are known', () => {
  const known = { TILL_PORT: '9000', TILL_DATA_DIR: '/x', TILL_RPC_PASSWORD: 'pw', TILL_CACHE_DIR: '/c', PATH: '/bin', TILLER: 'x', till_port: '1' };
  assert.deepEqual(unknownTillVariables(known), []);
  assert.deepEqual(unknownTillVariables({ ...known, TILL_PROT: '9000', TILL_PUBLICURL: 'https://x', TILL_: '' }), ['TILL_', 'TILL_PROT', 'TILL_PUBLICURL']);
});
