import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openSecretBox, SECRET_KEY_FILE, SecretKeyError } from '../../../src/auth/secret-box.ts';
import { tempDir } from '../../helpers/temp.ts';

describe('secret box (secret.key)', () => {
  test('the key is read at first use: a box never used neither needs nor makes secret.key', (t) => {
    const dir = tempDir(t);
    assert.doesNotThrow(() => openSecretBox(dir, { sealedSecrets: () => 3 }), 'a missing key is no error until a secret is sealed or opened');
    assert.equal(existsSync(join(dir, SECRET_KEY_FILE)), false);
  });

  test('with no secret sealed, the first use makes a key (owner-only) that later boxes share', (t) => {
    const dir = tempDir(t);
    const sealed = openSecretBox(dir, { sealedSecrets: () => 0 }).seal('whsec_a');
    assert.match(readFileSync(join(dir, SECRET_KEY_FILE), 'utf8'), /^[0-9a-f]{64}\n$/);
    assert.equal(openSecretBox(dir).open(sealed), 'whsec_a');
    assert.equal(openSecretBox(dir).load(), false, 'a box that found the key says it made none');
    assert.equal(openSecretBox(tempDir(t)).load(), true, 'a box that made one says so');
    assert.throws(() => openSecretBox(tempDir(t)).open(sealed), 'another key cannot open it');
  });

  test('a missing key beside sealed secrets is refused, naming the file and the way out, and none is made', (t) => {
    const dir = tempDir(t);
    const box = openSecretBox(dir, { sealedSecrets: () => 2 });
    for (const use of [() => box.seal('whsec_a'), () => box.open('v1:AAAA'), () => box.load()]) {
      assert.throws(use, (err: Error) => err instanceof SecretKeyError
        && err.message.includes(`${join(dir, SECRET_KEY_FILE)} is missing, and till.db holds 2 webhook signing secrets sealed with it`)
        && err.message.includes('till webhooks rotate --unreadable'));
    }
    assert.equal(existsSync(join(dir, SECRET_KEY_FILE)), false);
  });

  test('a key file that is there but unusable is refused as such, with both ways out, and never replaced', (t) => {
    const wayOut = 'restore it from your backup; if it is lost for good, move it aside and run till webhooks rotate --unreadable';
    const cases: Array<[string, (path: string) => void, RegExp]> = [
      ['not a key', (path) => writeFileSync(path, 'not a key\n'), /is not a Till secret key \(64 hex characters\): /],
      ['empty', (path) => writeFileSync(path, ''), /is not a Till secret key \(64 hex characters\): /],
      ['a folder', (path) => mkdirSync(path), /cannot be read \(EISDIR\): /],
      ['a link to nowhere', (path) => symlinkSync(join(path, '..', 'gone'), path), /cannot be read \(ENOENT\): /],
    ];
    for (const [name, make, said] of cases) {
      const dir = tempDir(t);
      const path = join(dir, SECRET_KEY_FILE);
      make(path);
      assert.throws(() => openSecretBox(dir).load(), (err: Error) => err instanceof SecretKeyError && said.test(err.message) && err.message.endsWith(wayOut), name);
      assert.throws(() => openSecretBox(dir).seal('whsec_a'), SecretKeyError, `${name}: no key is made in its place`);
    }
  });
});
