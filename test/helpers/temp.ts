import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/**
 * A fresh directory removed when the test ends. node:test runs after-hooks in
 * the order they were added, so this one may run while a till registered
 * later still writes there (a file made mid-removal: ENOTEMPTY): tried again
 * then, and never thrown, as a throwing hook skips the hooks after it (a
 * server left open kept its test file running for ever).
 */
export function tempDir(t: TestContext | { after(fn: () => void): void }, prefix = 'till-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  t.after(() => {
    try {
      remove();
    } catch {
      process.once('exit', remove);
    }
  });
  return dir;
}

/**
 * A fresh tmpfs of `sizeMiB` (a disk that fills, or one to remount read-only), unmounted and removed when
 * the test ends; null where none can be mounted (not root, or no CAP_SYS_ADMIN).
 */
export function tempMount(t: TestContext, sizeMiB: number): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'till-test-mount-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true });
    return null;
  }
  t.after(() => {
    execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true });
  });
  return dir;
}
