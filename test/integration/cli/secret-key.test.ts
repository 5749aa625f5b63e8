import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { openSecretBox, SECRET_KEY_FILE } from '../../../src/auth/secret-box.ts';
import { systemClock } from '../../../src/clock.ts';
import { loadConfig } from '../../../src/config.ts';
import { openDatabase } from '../../../src/db/connection.ts';
import { createContext, type Context } from '../../../src/services/context.ts';
import { runTill, tillJson } from '../../helpers/cli.ts';
import { tempDir } from '../../helpers/temp.ts';

// A data dir restored without its secret.key: what the operator sees, and the way out.

const RECEIVER = 'https://shop.example/till';
const MISSING = /secret\.key is missing, and till\.db holds 2 webhook signing secrets sealed with it: put back the secret\.key of the backup .* till webhooks rotate --unreadable makes a new key/;

/** A store (with its callback secret) and one endpoint, made through the CLI. */
async function storeWithEndpoint(dataDir: string): Promise<{ storeId: string; endpointId: string }> {
  const store = await tillJson(['store', 'create', '--name', 'S', '--mode', 'test'], { dataDir });
  const endpoint = await tillJson(['webhooks', 'add', '--store', store.id, '--url', RECEIVER], { dataDir });
  return { storeId: store.id, endpointId: endpoint.id };
}

/** The data dir opened in-process, to read what a delivery would sign with. */
function openTill(t: TestContext, dataDir: string): Context {
  const db = openDatabase(dataDir, { mustExist: true });
  t.after(() => db.close());
  return createContext(db, systemClock, loadConfig({ env: { TILL_DATA_DIR: dataDir } }));
}

describe('a lost secret.key (real CLI processes)', () => {
  test('serve and the commands that seal a secret refuse, naming the file and the way out; reading commands and backup work and make no key', async (t) => {
    const dataDir = tempDir(t);
    const { storeId } = await storeWithEndpoint(dataDir);
    rmSync(join(dataDir, SECRET_KEY_FILE));
    for (const args of [['--port', '0', 'serve'], ['webhooks', 'add', '--store', storeId, '--url', RECEIVER], ['store', 'create', '--name', 'T', '--mode', 'test'], ['webhooks', 'rotate', '--store', storeId, '--callback']]) {
      const r = await runTill(args, { dataDir });
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, MISSING, args.join(' '));
    }
    assert.equal((await tillJson(['store', 'list'], { dataDir })).length, 1, 'no store was made');
    assert.equal((await tillJson(['webhooks', 'list', '--store', storeId], { dataDir })).length, 1, 'no endpoint was added');
    const backup = await runTill(['--json', 'backup', '--out', tempDir(t)], { dataDir });
    assert.equal(backup.code, 0, backup.stderr);
    assert.match(backup.stderr, /secret\.key is missing, so this backup has none: .* \(till webhooks rotate --unreadable\)/);
    assert.equal(existsSync(join(dataDir, SECRET_KEY_FILE)), false, 'no command made a key that would open none of the secrets');
  });

  test('rotate --unreadable makes a new key and a new secret for the endpoint and the callback, which the till then signs with (an archived store\'s too: its events are still delivered)', async (t) => {
    const dataDir = tempDir(t);
    const { storeId, endpointId } = await storeWithEndpoint(dataDir);
    await tillJson(['store', 'archive', storeId], { dataDir });
    rmSync(join(dataDir, SECRET_KEY_FILE));
    assert.match((await runTill(['--port', '0', 'serve'], { dataDir })).stderr, MISSING);
    const out = await tillJson(['webhooks', 'rotate', '--unreadable'], { dataDir });
    assert.equal(out.made_key, true);
    assert.deepEqual(out.rotated.map((r: any) => [r.store_id, r.endpoint_id, r.url]), [[storeId, null, null], [storeId, endpointId, RECEIVER]]);
    const ctx = openTill(t, dataDir);
    const endpoint = ctx.repos.webhookEndpoints.get(endpointId)!;
    assert.equal(ctx.secrets.open(endpoint.secrets.secret), out.rotated[1].secret);
    assert.equal(endpoint.secrets.previous, null, 'an unreadable secret is not kept as the previous one');
    assert.equal(ctx.secrets.open(ctx.repos.webhookEndpoints.getCallbackSecrets(storeId)!.secret), out.rotated[0].secret);

    const again = await tillJson(['webhooks', 'rotate', '--unreadable'], { dataDir });
    assert.deepEqual(again, { made_key: false, rotated: [] });
    const human = await runTill(['webhooks', 'rotate', '--unreadable'], { dataDir });
    assert.equal(human.stdout, 'every secret in use opens with this secret.key: nothing to replace\n');
  });

  test('under another till\'s key, only the secrets it cannot open are replaced; those it opens stay as they were', async (t) => {
    const dataDir = tempDir(t);
    const a = await storeWithEndpoint(dataDir);
    const b = await storeWithEndpoint(dataDir);
    const ctx = openTill(t, dataDir);
    // Store b's endpoint as a data dir mixed from two tills holds it: sealed under a key this one does not have.
    ctx.db.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?').run(openSecretBox(tempDir(t)).seal('whsec_other'), b.endpointId);
    const before = ctx.db.prepare('SELECT id, secret FROM webhook_endpoints WHERE id = ?').get(a.endpointId);
    const out = await tillJson(['webhooks', 'rotate', '--unreadable'], { dataDir });
    assert.equal(out.made_key, false);
    assert.deepEqual(out.rotated.map((r: any) => r.endpoint_id), [b.endpointId]);
    assert.deepEqual(ctx.db.prepare('SELECT id, secret FROM webhook_endpoints WHERE id = ?').get(a.endpointId), before);
    assert.equal(ctx.secrets.open(ctx.repos.webhookEndpoints.get(b.endpointId)!.secrets.secret), out.rotated[0].secret);
  });

  test('a plain rotation says whether the previous secret stays valid: not when this key could not open it', async (t) => {
    const dataDir = tempDir(t);
    const { storeId, endpointId } = await storeWithEndpoint(dataDir);
    const kept = await tillJson(['webhooks', 'rotate', '--store', storeId, '--endpoint', endpointId], { dataDir });
    const hours = (Date.parse(kept.previous_secret_expires_at) - Date.now()) / 3_600_000;
    assert.ok(hours > 23 && hours <= 24, `valid for 24 h more, not ${hours}`);
    const ctx = openTill(t, dataDir);
    ctx.db.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?').run(openSecretBox(tempDir(t)).seal('whsec_other'), endpointId);
    const dropped = await runTill(['webhooks', 'rotate', '--store', storeId, '--endpoint', endpointId], { dataDir });
    assert.match(dropped.stdout, /^new secret \(shown once\): whsec_\w+\nno previous secret stays valid \(there was none, or this secret\.key could not open it\)/);
    assert.equal(ctx.repos.webhookEndpoints.get(endpointId)!.secrets.previous, null);
  });

  test('backup warns when its secret.key would not serve a restore (not a key, or another till\'s), and still writes the backup', async (t) => {
    const dataDir = tempDir(t);
    const { endpointId } = await storeWithEndpoint(dataDir);
    const backup = () => runTill(['--json', 'backup', '--out', tempDir(t)], { dataDir });
    const clean = await backup();
    assert.equal(clean.code, 0, clean.stderr);
    assert.equal(clean.stderr, '', 'a good key: no warning');

    const ctx = openTill(t, dataDir);
    ctx.db.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?').run(openSecretBox(tempDir(t)).seal('whsec_other'), endpointId);
    const mixed = await backup();
    assert.equal(mixed.code, 0, mixed.stderr);
    assert.match(mixed.stderr, /warning: 1 webhook signing secret in this backup cannot be opened with its secret\.key .*till webhooks rotate --unreadable/);
    assert.deepEqual(JSON.parse(mixed.stdout).files, ['till.db', 'secret.key']);

    writeFileSync(join(dataDir, SECRET_KEY_FILE), 'not a key\n');
    const garbage = await backup();
    assert.equal(garbage.code, 0, garbage.stderr);
    assert.match(garbage.stderr, /warning: .*secret\.key is not a Till secret key .*\. This backup's copy of it is no better/);

    // A check that cannot run (a database it cannot read secrets from, as an old schema's) costs a warning, not the backup.
    writeFileSync(join(dataDir, SECRET_KEY_FILE), `${randomBytes(32).toString('hex')}\n`);
    ctx.db.exec('ALTER TABLE webhook_endpoints RENAME TO webhook_endpoints_moved');
    const unchecked = await backup();
    assert.equal(unchecked.code, 0, unchecked.stderr);
    assert.match(unchecked.stderr, /warning: .*could not be checked against its webhook secrets \(no such table: webhook_endpoints\)/);
    assert.deepEqual(JSON.parse(unchecked.stdout).files, ['till.db', 'secret.key']);

  });

  test('--unreadable goes alone; the other forms still need --store', async (t) => {
    const dataDir = tempDir(t);
    const { storeId } = await storeWithEndpoint(dataDir);
    const mixed = await runTill(['webhooks', 'rotate', '--unreadable', '--store', storeId], { dataDir });
    assert.equal(mixed.code, 1);
    assert.match(mixed.stderr, /--unreadable covers every store: give it alone/);
    const bare = await runTill(['webhooks', 'rotate', '--callback'], { dataDir });
    assert.equal(bare.code, 1);
    assert.match(bare.stderr, /give --store <id> with --endpoint <id> or --callback \(or --unreadable alone\)/);
  });
});
