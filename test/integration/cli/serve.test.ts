import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { chmodSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { databasePath } from '../../../src/db/connection.ts';
import { LEASE_RENEW_MS, LEASE_TTL_MS } from '../../../src/services/server-lease.ts';
import { runTill, TILL } from '../../helpers/cli.ts';
import { startServe, whenServing } from '../../helpers/serve.ts';
import { tempDir } from '../../helpers/temp.ts';
import { waitFor } from '../../helpers/wait-for.ts';

test('npm start path: serve --demo on a fresh data dir creates a demo store and takes an invoice', async (t) => {
  const dataDir = tempDir(t);
  const till = await startServe(dataDir);
  t.after(() => till.stop());
  assert.ok(till.key, 'the demo API key is printed once');
  assert.match(till.output(), /callback_url.*shown once:\n\n  whsec_[0-9A-Za-z]+\n/, 'and the secret that signs its callback_url deliveries');
  const res = await fetch(`${till.url}/v1/invoices`, {
    method: 'POST',
    headers: { authorization: `Bearer ${till.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: '12.50', currency: 'USD' }),
  });
  assert.equal(res.status, 201);
  const inv = await res.json();
  assert.equal(inv.amount_sats, 19231, 'priced at the demo rate of 65,000 USD');
  assert.ok(inv.checkout_url.startsWith(till.url), 'links point at the bound address');
  const health = await (await fetch(`${till.url}/healthz`)).json();
  assert.equal(health.status, 'ok');
  assert.equal(health.chain.status, 'disabled');
  // The CLI on the demo's data directory takes its settings (the defaults are a mainnet till, which it would refuse).
  assert.match(till.output(), new RegExp(`The demo's settings are in ${dataDir}/till.toml`));
  const stores = await runTill(['store', 'list'], { dataDir });
  assert.equal(stores.code, 0, stores.stderr);
  assert.match(stores.stdout, /Demo Store/);
  assert.match((await runTill(['config', 'show'], { dataDir })).stdout, /network\s+regtest/);
});

test('serve --demo with a setting of its own (another network) writes that one down: the CLI still works there', async (t) => {
  const dataDir = tempDir(t);
  const till = await startServe(dataDir, { env: { TILL_NETWORK: 'signet' } });
  t.after(() => till.stop());
  assert.match(readFileSync(join(dataDir, 'till.toml'), 'utf8'), /^network = "signet"$/m);
  const stores = await runTill(['store', 'list'], { dataDir });
  assert.equal(stores.code, 0, stores.stderr);
});

test('a flood of connections using up the descriptors while the first group commit runs does not stop Till once it is over', async (t) => {
  const till = await startServe(tempDir(t), { maxDescriptors: 160 });
  t.after(() => till.stop());
  // Idle connections, more than the process may hold, from shortly before the first lease renewal (a group commit) to past it.
  await new Promise((r) => setTimeout(r, LEASE_RENEW_MS - 3000));
  const { port } = new URL(till.url);
  const flood = Array.from({ length: 300 }, () => connect(Number(port), '127.0.0.1').on('error', () => {}));
  await new Promise((r) => setTimeout(r, 6000));
  for (const socket of flood) socket.destroy();
  await new Promise((r) => setTimeout(r, 500));
  const health = await (await fetch(`${till.url}/healthz`)).json();
  assert.deepEqual(health.database, { status: 'ok', error: null });
  const res = await fetch(`${till.url}/v1/invoices`, {
    method: 'POST',
    headers: { authorization: `Bearer ${till.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount_sats: 1000 }),
  });
  assert.equal(res.status, 201);
});

test('a request\'s log line shows on stdout while a quiet till runs, not only when lines pile up', async (t) => {
  const till = await startServe(tempDir(t), { logLevel: 'info' });
  t.after(() => till.stop());
  const res = await fetch(`${till.url}/healthz`);
  const requestId = res.headers.get('x-request-id');
  assert.ok(requestId);
  const line = await waitFor(() => till.output().split('\n').find((l) => l.includes(requestId)), 'the request line within 5 s', 5_000);
  assert.deepEqual({ ...JSON.parse(line), time: 0, ms: 0 }, { level: 30, time: 0, req_id: requestId, method: 'GET', path: '/healthz', status: 200, ms: 0, msg: 'request' });
});

test('a second serve on the same data dir refuses to start; the CLI still works beside it', async (t) => {
  const dataDir = tempDir(t);
  const first = await startServe(dataDir);
  t.after(() => first.stop());
  const second = await runTill(['--port', '0', 'serve', '--demo'], { dataDir, timeoutMs: 20_000 });
  assert.equal(second.code, 1);
  assert.match(second.stderr, /another till serve \(pid \d+ on .*\) is running/);
  // On the demo's network (regtest): the data dir is bound to it.
  const list = await runTill(['--json', 'store', 'list'], { dataDir, env: { TILL_NETWORK: 'regtest' } });
  assert.equal(list.code, 0, list.stderr);
  assert.equal(JSON.parse(list.stdout).length, 1);
});

test('a serve --demo whose port is taken says so, and a retry on a free port starts at once and shows the demo key', async (t) => {
  const dataDir = tempDir(t);
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
  t.after(() => taken.close());
  const port = (taken.address() as AddressInfo).port;
  const first = await runTill(['--port', String(port), 'serve', '--demo'], { dataDir, timeoutMs: 20_000 });
  assert.equal(first.code, 1);
  assert.match(first.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE.*--port`));
  assert.doesNotMatch(first.stdout, /svc_test_/);
  // The data dir it made reads as the demo's (regtest) for every command, not as a mainnet till's holding regtest data.
  const list = await runTill(['--json', 'store', 'list'], { dataDir });
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(JSON.parse(list.stdout), []);
  // The failed start released its lease (no "another till serve is running") and made no demo store it could not show.
  const till = await startServe(dataDir);
  t.after(() => till.stop());
  assert.match(till.key, /^svc_test_/);
});

test('a serve that crashed (killed) is replaced at once: its lease binds nobody once its process is gone', async (t) => {
  const dataDir = tempDir(t);
  const first = await startServe(dataDir);
  await first.crash();
  const second = await startServe(dataDir, { seeded: true });
  t.after(() => second.stop());
  // Back at once (startServe rejects if it exits refusing), and serving the same store.
  const res = await fetch(`${second.url}/v1/invoices`, { method: 'POST', headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' }, body: '{"amount_sats":1000}' });
  assert.equal(res.status, 201);
  // The key was shown at the first start only: a restart says how to make another.
  await waitFor(() => second.output().includes('keys mint'), 'the hint', 5_000);
  assert.match(second.output(), /^The demo's API key was shown at its first start; another: npm run till -- keys mint --store <id> --env test \(ids: npm run till -- store list\)$/m);
  assert.doesNotMatch(second.output(), /svc_test_/);
});

test('after a reboot, the last boot\'s lease binds nobody: its pid is another process\'s now, and the clock (no battery) is behind its last renewal', async (t) => {
  const dataDir = tempDir(t);
  await (await startServe(dataDir)).crash();
  const db = new Database(databasePath(dataDir));
  t.after(() => db.close());
  const lease = JSON.parse(db.prepare("SELECT value FROM meta WHERE key = 'server_lease'").pluck().get() as string);
  // This test's own process stands for whatever took that pid in the new boot.
  const lastBoot = { ...lease, pid: process.pid, boot: '00000000-0000-4000-8000-000000000000', renewedAt: Date.now() + 3_600_000 };
  db.prepare("UPDATE meta SET value = ? WHERE key = 'server_lease'").run(JSON.stringify(lastBoot));
  const next = await startServe(dataDir, { seeded: true });
  await next.stop();
});

test('SIGTERM while an admin command holds the write lock past the busy timeout: Till still stops cleanly (exit 0)', async (t) => {
  const dataDir = tempDir(t);
  const till = await startServe(dataDir, { env: { TILL_BUSY_TIMEOUT_MS: '200' } });
  t.after(() => till.crash());
  const admin = new Database(databasePath(dataDir));
  t.after(() => admin.open && admin.close());
  admin.exec('BEGIN IMMEDIATE');
  till.signal('SIGTERM');
  await new Promise((r) => setTimeout(r, 1000));
  admin.exec('COMMIT');
  assert.equal(await till.exited, 0, till.errors());
  // Its lease could not be released, yet binds nobody: its process is gone.
  const next = await startServe(dataDir, { seeded: true });
  await next.stop();
});

test('SIGTERM while Till is still starting (its lease waits for an admin command\'s write lock): it finishes starting, then stops cleanly (exit 0)', async (t) => {
  const dataDir = tempDir(t);
  await (await startServe(dataDir)).stop();
  const admin = new Database(databasePath(dataDir));
  t.after(() => admin.open && admin.close());
  admin.exec('BEGIN IMMEDIATE');
  const child = spawn(process.execPath, [TILL, '--data-dir', dataDir, '--port', '0', 'serve', '--demo'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TILL_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  const serving = whenServing(child, { seeded: true });
  // Its database is open: it is starting, and its lease waits for the lock.
  const opened = () => readdirSync(`/proc/${child.pid}/fd`).some((fd) => { try { return readlinkSync(`/proc/${child.pid}/fd/${fd}`) === databasePath(dataDir); } catch { return false; } });
  await waitFor(opened, 'the starting till to open its database');
  child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  admin.exec('COMMIT');
  const till = await serving;
  assert.equal(await till.exited, 0, till.errors());
});

test('a serve whose lease was taken over while it was paused stops, naming the other; the other goes on', async (t) => {
  const dataDir = tempDir(t);
  const first = await startServe(dataDir);
  t.after(() => first.crash());
  const db = new Database(databasePath(dataDir));
  t.after(() => db.close());
  // Paused past its lease's 15 s (SIGSTOP, a suspended VM): its last renewal looks that old.
  first.signal('SIGSTOP');
  const lease = JSON.parse(db.prepare("SELECT value FROM meta WHERE key = 'server_lease'").pluck().get() as string);
  db.prepare("UPDATE meta SET value = ? WHERE key = 'server_lease'").run(JSON.stringify({ ...lease, renewedAt: Date.now() - LEASE_TTL_MS - 1000 }));
  const second = await startServe(dataDir, { seeded: true });
  t.after(() => second.stop());
  first.signal('SIGCONT');
  // Its next renewal (every 5 s) finds the other's lease.
  const code = await Promise.race([first.exited, new Promise((r) => setTimeout(r, 15_000, 'still running after 15 s'))]);
  assert.equal(code, 1);
  assert.match(first.errors(), new RegExp(`another till serve \\(pid ${second.pid} on .*\\) took over`));
  const res = await fetch(`${second.url}/v1/invoices`, { method: 'POST', headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' }, body: '{"amount_sats":1000}' });
  assert.equal(res.status, 201);
  assert.equal(JSON.parse(db.prepare("SELECT value FROM meta WHERE key = 'server_lease'").pluck().get() as string).pid, second.pid);
});

/** A started `till serve` with an invoice whose checkout event stream is open (its first message read). */
async function startServeWithStream(t: TestContext) {
  const till = await startServe(tempDir(t));
  t.after(() => till.crash());
  const headers = { authorization: `Bearer ${till.key}`, 'content-type': 'application/json' };
  const inv = await (await fetch(`${till.url}/v1/invoices`, { method: 'POST', headers, body: '{"amount_sats":1000}' })).json();
  const events = await fetch(`${till.url}/pay/invoices/${inv.id}/events`);
  const reader = events.body!.getReader();
  assert.match(new TextDecoder().decode((await reader.read()).value), /^retry:|event:|data:/m);
  return { till, headers, reader };
}

test('SIGTERM: a request under way still gets its answer (a second signal meanwhile too), checkout streams end, then Till exits 0', async (t) => {
  const { till, headers, reader } = await startServeWithStream(t);

  // A creation whose body is still coming when the signal arrives.
  const body = '{"amount_sats":2000}';
  const { port } = new URL(till.url);
  const socket = connect(Number(port), '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => (answer += d));
  const ended = new Promise((r) => socket.once('close', r));
  socket.write(`POST /v1/invoices HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${headers.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
  await new Promise((r) => setTimeout(r, 200));
  till.signal('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  till.signal('SIGINT');
  await new Promise((r) => setTimeout(r, 200));
  socket.write(body.slice(5));
  await ended;
  assert.match(answer, /^HTTP\/1\.1 201 /, answer.slice(0, 200));
  // The stream ended by itself (EventSource reconnects to the restarted till).
  for (let i = 0; i < 10 && !(await reader.read()).done; i++);
  assert.equal(await till.exited, 0, till.errors());
});

test('SIGHUP (the terminal or ssh session it was started from closes): Till stops as on SIGTERM, streams ended, exit 0', async (t) => {
  const { till, reader } = await startServeWithStream(t);
  till.signal('SIGHUP');
  // The stream ends as Till stops (cut by the default action, the read would reject).
  for (let i = 0; i < 10 && !(await reader.read()).done; i++);
  assert.equal(await till.exited, 0, till.errors());
});

test('a data dir whose secret files others may read (a restore by cp, an archive) is started, with a warning naming them', async (t) => {
  const dataDir = tempDir(t);
  const first = await startServe(dataDir, { logLevel: 'warn' });
  await first.stop();
  assert.doesNotMatch(first.output(), /other users may read/, 'Till makes them 0600');
  chmodSync(join(dataDir, 'secret.key'), 0o644);
  chmodSync(join(dataDir, 'till.toml'), 0o640);
  const second = await startServe(dataDir, { logLevel: 'warn', seeded: true });
  t.after(() => second.crash());
  // Stopped, its log is all out.
  await second.stop();
  assert.match(second.output(), /"files":\["secret\.key \(0644\)","till\.toml \(0640\)"\],"msg":"other users may read secret\.key \(0644\), till\.toml \(0640\) in the data directory: chmod 600 them/);
});

test('a till without public_url warns at start that buyers cannot open its checkout links; with one, or as the demo, it does not', async (t) => {
  const dataDir = tempDir(t);
  const serve = (env: Record<string, string>) => {
    const child = spawn(process.execPath, [TILL, '--data-dir', dataDir, '--port', '0', 'serve'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TILL_LOG_LEVEL: 'silent', TILL_NETWORK: 'regtest', TILL_BITCOIND: 'false', TILL_RATES: 'fixed:65000', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return whenServing(child, { seeded: true });
  };
  const bare = await serve({});
  t.after(() => bare.stop());
  await waitFor(() => bare.errors().includes('public_url is not set'), 'the warning', 5_000);
  assert.match(bare.errors(), new RegExp(`^till: warning: public_url is not set: the checkout_url of invoices \\(in answers and webhooks\\) is ${bare.url}/checkout/…, which buyers cannot open`, 'm'));
  await bare.stop();

  const proxied = await serve({ TILL_PUBLIC_URL: 'https://pay.example.com' });
  t.after(() => proxied.stop());
  // Its other start-up lines are written by then: the warning would have come with them.
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.doesNotMatch(proxied.errors(), /public_url/);
  await proxied.stop();

  const demo = await startServe(tempDir(t));
  t.after(() => demo.stop());
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.doesNotMatch(demo.errors(), /public_url/);
});
