import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/** A fresh directory removed when the test ends. */
export function tempDir(t: TestContext | { after(fn: () => void): void }, prefix = 'till-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
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
