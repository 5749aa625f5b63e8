import { spawnSync } from 'node:child_process';

/**
 * Installs Debian packages (as root): what a test needs, it installs itself.
 * Tests run two files at a time, and two may install at once: apt waits for
 * the other's lock instead of failing. The package lists are read again only
 * when the first try fails (a fresh machine may have none).
 */
export function installDebianPackages(packages: readonly string[]): string | null {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (...args: string[]) => spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=600', ...args], { env, encoding: 'utf8', timeout: 900_000 });
  if (apt('install', '-y', '-qq', ...packages).status === 0) return null;
  apt('update', '-qq');
  const last = apt('install', '-y', '-qq', ...packages);
  return last.status === 0 ? null : `apt-get install ${packages.join(' ')} failed: ${(last.stderr || last.error?.message || '').trim().split('\n').at(-1)}`;
}
