import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { linkSync, lstatSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Webhook signing secrets must be usable (HMAC needs the secret itself), so
// they cannot be hashed like API keys. They are sealed with AES-256-GCM under a
// key kept in the data dir's secret.key (mode 0600): a copy of till.db alone —
// a backup, a support bundle — does not reveal them. Back up secret.key with it.

export const SECRET_KEY_FILE = 'secret.key';
const VERSION = 'v1';

export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
  /**
   * Reads (or makes) the key now, so a till that will sign finds a lost key at
   * start, not at its first delivery. True when this box made it.
   */
  load(): boolean;
}

/** secret.key unusable: missing while sealed secrets need it, unreadable, or not a key. Said as it is, never as an unexpected error. */
export class SecretKeyError extends Error {}

export interface SecretBoxOptions {
  /**
   * How many secrets in the database are sealed and still in use. A new key is
   * made only when none are: a key made beside them would open none of them,
   * and every delivery would fail until each secret was rotated by hand.
   */
  sealedSecrets?: () => number;
}

/** What to do about a secret.key that is there but unusable. */
const UNUSABLE = 'restore it from your backup; if it is lost for good, move it aside and run till webhooks rotate --unreadable';

function readOrMakeKey(dataDir: string, opts: SecretBoxOptions): { key: Buffer; made: boolean } {
  const path = join(dataDir, SECRET_KEY_FILE);
  let made = false;
  // lstat: a link to nowhere is a key file that cannot be read, not a missing one to make.
  if (!lstatSync(path, { throwIfNoEntry: false })) {
    const sealed = opts.sealedSecrets?.() ?? 0;
    if (sealed > 0) {
      throw new SecretKeyError(
        `${path} is missing, and till.db holds ${sealed} webhook signing secret${sealed === 1 ? '' : 's'} sealed with it: ` +
          'put back the secret.key of the backup till.db came from (a till backup folder holds both). ' +
          'If it is lost for good, till webhooks rotate --unreadable makes a new key and a new secret for every endpoint and store callback; each receiving server must then be given its new one.',
      );
    }
    // Written whole to a temp file, then linked into place: link() fails if
    // another process (server and CLI at once) created it first, and a crash
    // never leaves a half-written key.
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
    try {
      linkSync(tmp, path);
      made = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(tmp);
    }
  }
  let hex: string;
  try {
    hex = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new SecretKeyError(`${path} cannot be read (${(err as NodeJS.ErrnoException).code}): ${UNUSABLE}`);
  }
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new SecretKeyError(`${path} is not a Till secret key (64 hex characters): ${UNUSABLE}`);
  return { key: Buffer.from(hex, 'hex'), made };
}

/**
 * The box reads its key at first use: commands that never seal nor open (a
 * backup, a store list) neither need secret.key nor make one.
 */
export function openSecretBox(dataDir: string, opts: SecretBoxOptions = {}): SecretBox {
  let loaded: { key: Buffer; made: boolean } | null = null;
  const key = () => (loaded ??= readOrMakeKey(dataDir, opts)).key;
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key(), iv);
      const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64')}`;
    },
    open(sealed) {
      const [version, b64] = sealed.split(':');
      if (version !== VERSION || !b64) throw new Error('sealed secret has an unknown format');
      const raw = Buffer.from(b64, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key(), raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
    load() {
      key();
      return loaded!.made;
    },
  };
}
