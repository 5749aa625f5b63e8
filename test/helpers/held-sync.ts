import type { WalSync } from '../../src/db/wal-sync.ts';
import type { TestTill } from './till-server.ts';

/** How long an fdatasync may be held: a test that fails before returning it must still be able to stop its Till. */
const HOLD_AT_MOST_MS = 5000;

/** A WalSync whose fdatasync returns when the test says so, in order (or, failing, after 5 s). */
export function heldSync() {
  const waiting: Array<(err: Error | null) => void> = [];
  const sync: WalSync = {
    sync(done) {
      const timer = setTimeout(() => finishOne(new Error('held too long by the test')), HOLD_AT_MOST_MS);
      waiting.push((err) => {
        clearTimeout(timer);
        done(err);
      });
    },
    close() {},
  };
  function finishOne(err: Error | null): void {
    const done = waiting.shift();
    if (!done) throw new Error('no fdatasync is waiting');
    done(err);
  }
  return {
    sync,
    /** fdatasyncs asked for and not returned yet. */
    get requested(): number {
      return waiting.length;
    },
    /** Returns the oldest fdatasync asked for, with `err` if given. */
    finish(err: Error | null = null): void {
      finishOne(err);
    },
    /** Resolves once an fdatasync is waiting (at most ~2 s). */
    async untilRequested(): Promise<void> {
      for (let i = 0; i < 400 && waiting.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
      if (waiting.length === 0) throw new Error('no fdatasync was asked for');
    },
  };
}

/**
 * Makes a write whose batch's fdatasync fails with `message` (its code is the
 * message's first word): `write` is started with the runtime's fdatasync held,
 * which then fails. Till refuses everything from then on.
 */
export async function failSyncDuring<T>(till: TestTill, write: () => Promise<T>, message: string) {
  const held = heldSync();
  await till.rt.ctx.writes.useWalSync(held.sync);
  const written = write();
  await held.untilRequested();
  held.finish(Object.assign(new Error(message), { code: message.split(':')[0] }));
  return { held, result: await written };
}
