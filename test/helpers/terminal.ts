import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const TILL = fileURLToPath(new URL('../../cli/till.ts', import.meta.url));

/**
 * Runs `till <args>` on a pseudo-terminal, so its prompts ask (util-linux
 * `script`, in Debian's essential bsdutils). Output has its ANSI escapes
 * stripped; the child is killed after 30 s.
 */
export function runTillOnTerminal(args: string[], env: Record<string, string> = {}) {
  const quoted = [process.execPath, TILL, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', `stty cols 200 rows 50; ${quoted}`, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent-home', TERM: 'xterm', TILL_LOG_LEVEL: 'silent', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  const add = (d: Buffer) => (out += String(d).replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ''));
  child.stdout.on('data', add);
  child.stderr.on('data', add);
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => {
    clearTimeout(killer);
    resolve(code);
  }));
  let seen = 0;
  return {
    /** Waits (at most 10 s) for text after what was last waited for, then types `keys`. */
    async expect(re: RegExp, keys?: string): Promise<void> {
      const started = Date.now();
      for (;;) {
        const m = re.exec(out.slice(seen));
        if (m) {
          seen += m.index + m[0].length;
          break;
        }
        if (Date.now() - started > 10_000) throw new Error(`timed out waiting for ${re}; output:\n${out.slice(-1500)}`);
        await new Promise((r) => setTimeout(r, 30));
      }
      if (keys !== undefined) {
        // The prompt draws itself after its text: keys typed before it is ready are lost.
        await new Promise((r) => setTimeout(r, 100));
        child.stdin.write(keys);
      }
    },
    output: () => out,
    closed,
  };
}
