import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onCleanup } from './cleanup.ts';

// HTTP load comes from wrk (Debian package): one thread, so on a 2-core
// machine wrk and the server under test each get a core.

export interface WrkOptions {
  connections?: number;
  threads?: number;
  durationS?: number;
  /** Lua source of a wrk script (request rotation, method, body). */
  script?: string;
  /** Where to write the script file. */
  scriptDir?: string;
  headers?: Record<string, string>;
}

export interface WrkResult {
  requestsPerSec: number;
  requests: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  /** Responses outside 2xx/3xx: a non-zero count means the figure measured errors too. */
  non2xx: number;
  socketErrors: string | null;
  output: string;
}

let checked = false;

/** Makes sure wrk is on PATH: installs the Debian package when root, else says how. */
export function ensureWrk(): void {
  if (checked) return;
  const found = () => spawnSync('wrk', ['--version']).error === undefined;
  if (!found()) {
    if (process.getuid?.() !== 0) throw new Error('wrk is not installed; install it with: sudo apt-get install -y wrk');
    console.error('wrk is missing: apt-get install -y wrk');
    const r = spawnSync('apt-get', ['install', '-y', 'wrk'], { stdio: 'inherit' });
    if (r.status !== 0 || !found()) throw new Error('apt-get install -y wrk failed; install wrk and run again');
  }
  checked = true;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function parseLatency(output: string, pct: string): number {
  const m = new RegExp(`^\\s*${pct}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(output);
  if (!m) throw new Error(`wrk output has no ${pct}% latency:\n${output}`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

export function parseWrk(output: string): WrkResult {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(output);
  const total = /^\s*(\d+) requests in/m.exec(output);
  if (!rps || !total) throw new Error(`unexpected wrk output:\n${output}`);
  return {
    requestsPerSec: Number(rps[1]),
    requests: Number(total[1]),
    p50Ms: parseLatency(output, '50'),
    p90Ms: parseLatency(output, '90'),
    p99Ms: parseLatency(output, '99'),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(output)?.[1] ?? 0),
    socketErrors: /Socket errors:.*$/m.exec(output)?.[0] ?? null,
    output,
  };
}

let scriptCount = 0;

/** A warm-up run of `warmupS` seconds, then the measured one with the same options. */
export async function runWrkWarm(url: string, opts: WrkOptions, warmupS: number): Promise<WrkResult> {
  await runWrk(url, { ...opts, durationS: warmupS });
  return runWrk(url, opts);
}

export function runWrk(url: string, opts: WrkOptions = {}): Promise<WrkResult> {
  ensureWrk();
  const args = [`-t${opts.threads ?? 1}`, `-c${opts.connections ?? 64}`, `-d${opts.durationS ?? 10}s`, '--latency'];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (opts.script !== undefined) {
    if (!opts.scriptDir) throw new Error('runWrk: a script needs a scriptDir');
    const file = join(opts.scriptDir, `wrk-${++scriptCount}.lua`);
    writeFileSync(file, opts.script);
    args.push('-s', file);
  }
  args.push(url);
  return new Promise((resolve, reject) => {
    const proc = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const forget = onCleanup(() => proc.exitCode === null && proc.kill('SIGKILL'));
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    proc.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
    proc.once('error', reject);
    proc.once('exit', (code) => {
      forget();
      if (code !== 0) return reject(new Error(`wrk exited with ${code}:\n${out}`));
      try {
        resolve(parseWrk(out));
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** A Lua string literal. */
export function luaString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * A wrk script that sends `method path body` and rotates the bearer key
 * through `keys` request by request (1 thread: one counter covers all), so
 * each key stays under its per-minute limit.
 */
export function rotatingKeysScript(method: string, path: string, body: string | null, keys: string[]): string {
  return `
local keys = { ${keys.map(luaString).join(', ')} }
local reqs = {}
local n = 0
function init(args)
  for i, key in ipairs(keys) do
    local headers = { ["Authorization"] = "Bearer " .. key }
    ${body === null ? '' : 'headers["Content-Type"] = "application/json"'}
    reqs[i] = wrk.format(${luaString(method)}, ${luaString(path)}, headers, ${body === null ? 'nil' : luaString(body)})
  end
end
function request()
  n = n % #reqs + 1
  return reqs[n]
end
`;
}
