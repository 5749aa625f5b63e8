import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { CACHE_DIR_ENV } from './embedded.ts';
import { parseRateSources } from './rates/provider.ts';

// One table describes every setting: its file key, environment variable and
// flag, default, whether it is secret, and how to parse it. Precedence:
// defaults < demo defaults (`serve --demo`) < till.toml|till.json in the data
// dir < TILL_* environment < command-line flags.

export const NETWORKS = ['main', 'test', 'signet', 'regtest'] as const;
export type Network = (typeof NETWORKS)[number];

export interface Config {
  dataDir: string;
  host: string;
  port: number;
  publicUrl: string;
  dashboardUrl: string;
  network: Network;
  rates: string;
  synchronous: 'FULL' | 'NORMAL';
  busyTimeoutMs: number;
  minFreeDiskMb: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent';
  rpcUrl: string;
  rpcUser: string;
  rpcPassword: string;
  rpcCookieFile: string;
  zmqEndpoint: string;
  watchChain: boolean;
  addressPoolSize: number;
  allowPrivateCallbacks: boolean;
  maxStreamsPerClient: number;
  maxStreamsTotal: number;
  trustedProxies: string;
}

type Parser<T> = (raw: unknown, where: string) => T;

interface Setting<K extends keyof Config> {
  key: K;
  file: string;
  env: string;
  flag: string;
  description: string;
  secret?: boolean;
  parse: Parser<Config[K]>;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** A bad value given as a command-line flag: a usage error, which the CLI says with the hint to the command's help. */
export class FlagError extends ConfigError {
  override name = 'FlagError';
}

/** `parse(raw, where)`; a value a flag gave (where is "--flag") that it refuses is a FlagError, with the same message. */
function parseSetting<T>(parse: Parser<T>, raw: unknown, where: string): T {
  try {
    return parse(raw, where);
  } catch (err) {
    throw err instanceof ConfigError && where.startsWith('--') ? new FlagError(err.message) : err;
  }
}

function asString(raw: unknown, where: string): string {
  if (typeof raw !== 'string') throw new ConfigError(`${where} must be a string`);
  return raw;
}

/** A directory: empty would silently mean wherever Till was started. */
function directory(raw: unknown, where: string): string {
  const s = asString(raw, where);
  if (s.trim() === '') throw new ConfigError(`${where} must not be empty (default: ./data)`);
  return s;
}

/** A rate source list, checked as the rate service will read it, so a typo stops Till naming where it was written. */
function rateSources(raw: unknown, where: string): string {
  const spec = asString(raw, where);
  try {
    parseRateSources(spec);
  } catch (err) {
    throw new ConfigError(`${where}: ${(err as Error).message}`);
  }
  return spec;
}

function oneOf<T extends string>(values: readonly T[]): Parser<T> {
  return (raw, where) => {
    const s = asString(raw, where);
    if (!(values as readonly string[]).includes(s)) throw new ConfigError(`${where} must be one of ${values.join(', ')} (got "${s}")`);
    return s as T;
  };
}

function integer(min: number, max: number): Parser<number> {
  return (raw, where) => {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new ConfigError(`${where} must be an integer from ${min} to ${max}`);
    return n;
  };
}

function boolean(raw: unknown, where: string): boolean {
  if (typeof raw === 'boolean') return raw;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${where} must be true or false`);
}

function httpUrl(raw: unknown, where: string): string {
  const s = asString(raw, where);
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    // Echoed without what could be a user and password before an @.
    throw new ConfigError(`${where} must be an http(s) URL (got "${s.replace(/^([^/]*\/\/)[^/]*@/, '$1…@')}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${where} must be an http(s) URL`);
  // Never used from a URL (fetch refuses them), and `config show` would print the password: said, not echoed.
  if (url.username || url.password) {
    const instead = /rpc/i.test(where) ? ' (bitcoind.rpc_user and bitcoind.rpc_password, or its cookie file)' : '';
    throw new ConfigError(`${where} must not hold a user name or password${instead}`);
  }
  return s.replace(/\/+$/, '');
}

function optionalHttpUrl(raw: unknown, where: string): string {
  return raw === '' ? '' : httpUrl(raw, where);
}

function host(raw: unknown, where: string): string {
  const s = asString(raw, where);
  if (!/^[A-Za-z0-9.:\-\[\]]{1,253}$/.test(s)) throw new ConfigError(`${where} must be a host name or IP address`);
  return s;
}

function zmqEndpoint(raw: unknown, where: string): string {
  const s = asString(raw, where);
  if (s !== '' && !/^tcp:\/\/[A-Za-z0-9.\-\[\]:]+:\d{1,5}$/.test(s)) throw new ConfigError(`${where} must look like tcp://127.0.0.1:28332`);
  return s;
}

function ipList(raw: unknown, where: string): string {
  const s = asString(raw, where);
  const ips = s.split(',').map((ip) => ip.trim()).filter(Boolean);
  const bad = ips.find((ip) => isIP(ip) === 0);
  if (bad !== undefined) throw new ConfigError(`${where} must be IP addresses separated by commas (got "${bad}")`);
  return ips.join(',');
}

function setting<K extends keyof Config>(s: Setting<K>): Setting<K> {
  return s;
}

export const SETTINGS = [
  setting({ key: 'dataDir', file: 'data_dir', env: 'TILL_DATA_DIR', flag: 'data-dir', description: 'directory holding till.db and till.toml', parse: directory }),
  setting({ key: 'host', file: 'host', env: 'TILL_HOST', flag: 'host', description: 'address to listen on (loopback unless told otherwise)', parse: host }),
  setting({ key: 'port', file: 'port', env: 'TILL_PORT', flag: 'port', description: 'TCP port to listen on (0 picks a free one)', parse: integer(0, 65535) }),
  setting({ key: 'publicUrl', file: 'public_url', env: 'TILL_PUBLIC_URL', flag: 'public-url', description: 'base URL buyers reach Till at (checkout links)', parse: optionalHttpUrl }),
  setting({ key: 'dashboardUrl', file: 'dashboard_url', env: 'TILL_DASHBOARD_URL', flag: 'dashboard-url', description: 'base URL of the dashboard named in error messages (empty: Till\'s own help pages)', parse: optionalHttpUrl }),
  setting({ key: 'network', file: 'network', env: 'TILL_NETWORK', flag: 'network', description: 'bitcoin network: main, test, signet or regtest (a data dir keeps the one it was first used with)', parse: oneOf(NETWORKS) }),
  setting({ key: 'rates', file: 'rates', env: 'TILL_RATES', flag: 'rates', description: 'USD rate sources: kraken,bitstamp,coinbase or fixed:<usd>', parse: rateSources }),
  setting({ key: 'synchronous', file: 'synchronous', env: 'TILL_SYNCHRONOUS', flag: 'synchronous', description: 'SQLite durability: FULL (default) or NORMAL', parse: oneOf(['FULL', 'NORMAL'] as const) }),
  setting({ key: 'busyTimeoutMs', file: 'busy_timeout_ms', env: 'TILL_BUSY_TIMEOUT_MS', flag: 'busy-timeout-ms', description: 'how long a write waits for another connection (e.g. the CLI) before 503 database_unavailable', parse: integer(0, 60_000) }),
  setting({ key: 'minFreeDiskMb', file: 'min_free_disk_mb', env: 'TILL_MIN_FREE_DISK_MB', flag: 'min-free-disk-mb', description: 'refuse writes (503 disk_full) below this much free space', parse: integer(0, 1_000_000) }),
  setting({ key: 'logLevel', file: 'log_level', env: 'TILL_LOG_LEVEL', flag: 'log-level', description: 'fatal, error, warn, info, debug or silent', parse: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const) }),
  setting({ key: 'rpcUrl', file: 'bitcoind.rpc_url', env: 'TILL_RPC_URL', flag: 'rpc-url', description: "bitcoind JSON-RPC URL (default: the network's port on 127.0.0.1)", parse: optionalHttpUrl }),
  setting({ key: 'rpcUser', file: 'bitcoind.rpc_user', env: 'TILL_RPC_USER', flag: 'rpc-user', description: 'bitcoind RPC user (instead of the cookie file)', parse: asString }),
  setting({ key: 'rpcPassword', file: 'bitcoind.rpc_password', env: 'TILL_RPC_PASSWORD', flag: 'rpc-password', description: 'bitcoind RPC password', secret: true, parse: asString }),
  setting({ key: 'rpcCookieFile', file: 'bitcoind.cookie_file', env: 'TILL_RPC_COOKIE_FILE', flag: 'rpc-cookie-file', description: "bitcoind .cookie file (default: the network's in ~/.bitcoin: .cookie on main, testnet3/.cookie, signet/.cookie, regtest/.cookie)", parse: asString }),
  setting({ key: 'zmqEndpoint', file: 'bitcoind.zmq', env: 'TILL_ZMQ', flag: 'zmq', description: 'bitcoind ZMQ endpoint (default: asked of bitcoind)', parse: zmqEndpoint }),
  setting({ key: 'watchChain', file: 'bitcoind.enabled', env: 'TILL_BITCOIND', flag: 'bitcoind', description: 'watch the chain through bitcoind (false: test-mode only, e.g. the demo)', parse: boolean }),
  setting({ key: 'addressPoolSize', file: 'address_pool_size', env: 'TILL_ADDRESS_POOL_SIZE', flag: 'address-pool-size', description: 'addresses derived ahead per xpub', parse: integer(1, 1_000_000) }),
  setting({ key: 'allowPrivateCallbacks', file: 'webhooks.allow_private', env: 'TILL_ALLOW_PRIVATE_CALLBACKS', flag: 'allow-private-callbacks', description: 'allow webhooks to loopback, link-local and private addresses', parse: boolean }),
  setting({ key: 'maxStreamsPerClient', file: 'max_streams_per_client', env: 'TILL_MAX_STREAMS_PER_CLIENT', flag: 'max-streams-per-client', description: 'checkout streams (SSE + WebSocket) one client (IPv4 address, IPv6 /64) may hold open', parse: integer(1, 1_000_000) }),
  setting({ key: 'maxStreamsTotal', file: 'max_streams_total', env: 'TILL_MAX_STREAMS_TOTAL', flag: 'max-streams-total', description: 'checkout streams (SSE + WebSocket) open at once in total', parse: integer(1, 10_000_000) }),
  setting({ key: 'trustedProxies', file: 'trusted_proxies', env: 'TILL_TRUSTED_PROXIES', flag: 'trusted-proxies', description: 'reverse proxies (IP addresses, comma-separated) whose X-Forwarded-For names the client; empty: none', parse: ipList }),
] as const;

export const DEFAULTS: Omit<Config, 'dataDir'> & { dataDir: string } = {
  dataDir: './data',
  host: '127.0.0.1',
  port: 8080,
  publicUrl: '',
  dashboardUrl: '',
  network: 'main',
  rates: 'kraken,bitstamp,coinbase',
  synchronous: 'FULL',
  busyTimeoutMs: 5000,
  minFreeDiskMb: 64,
  logLevel: 'info',
  rpcUrl: '',
  rpcUser: '',
  rpcPassword: '',
  rpcCookieFile: '',
  zmqEndpoint: '',
  watchChain: true,
  addressPoolSize: 200,
  allowPrivateCallbacks: false,
  maxStreamsPerClient: 20,
  maxStreamsTotal: 20_000,
  trustedProxies: '127.0.0.1,::1',
};

/** What `npm start` (serve --demo) runs on: regtest, a fixed rate, no bitcoind, no internet needed. */
// Private receivers allowed: a developer tries webhooks with a receiver on localhost.
export const DEMO_DEFAULTS: Partial<Config> = { network: 'regtest', rates: 'fixed:65000', watchChain: false, allowPrivateCallbacks: true };

export const CONFIG_FILES = ['till.toml', 'till.json'];

export interface LoadOptions {
  flags?: Partial<Record<keyof Config, unknown>>;
  env?: NodeJS.ProcessEnv;
  demo?: boolean;
  /** Leave till.toml out (init, which replaces it). */
  ignoreFile?: boolean;
}

function readNested(obj: Record<string, unknown>, dotted: string): unknown {
  let cur: unknown = obj;
  for (const part of dotted.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function readConfigFile(dataDir: string): { path: string; values: Record<string, unknown> } | null {
  for (const name of CONFIG_FILES) {
    const path = join(dataDir, name);
    if (!existsSync(path)) continue;
    const text = readFileSync(path, 'utf8');
    try {
      const values = name.endsWith('.toml') ? parseToml(text) : JSON.parse(text);
      if (values === null || typeof values !== 'object' || Array.isArray(values)) throw new Error('not a table');
      return { path, values: values as Record<string, unknown> };
    } catch (err) {
      throw new ConfigError(`${path} could not be read: ${withoutQuotedText(err as Error)}`);
    }
  }
  return null;
}

/**
 * A parser's error without the text it quotes around the mistake, which may be
 * the line holding bitcoind's RPC password: what is wrong, and where.
 */
function withoutQuotedText(err: Error & { line?: number; column?: number }): string {
  const what = err.message.split('\n')[0]!.replace(/, .*is not valid JSON$/, ': not valid JSON');
  return typeof err.line === 'number' ? `${what} (line ${err.line}, column ${err.column})` : what;
}

const KNOWN_FILE_KEYS = new Set(SETTINGS.map((s) => s.file));
const KNOWN_VARIABLES = new Set<string>([...SETTINGS.map((s) => s.env), CACHE_DIR_ENV]);

/** The TILL_… variables of `env` that Till does not read: a misspelt setting would otherwise go unnoticed. */
export function unknownTillVariables(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.keys(env).filter((name) => name.startsWith('TILL_') && !KNOWN_VARIABLES.has(name)).sort();
}

/** The file's settings as dotted paths; a key with a dot in its own name is marked (quoted), so it is never taken for a path. */
function listFileKeys(obj: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(obj).flatMap(([k, v]) => {
    const name = k.includes('.') ? JSON.stringify(k) : k;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? listFileKeys(v as Record<string, unknown>, `${prefix}${name}.`) : [`${prefix}${name}`];
  });
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const flags = opts.flags ?? {};
  const layers: Array<[string, (s: (typeof SETTINGS)[number]) => unknown]> = [];
  // The data dir decides where the file is, so it is resolved first.
  const dataDirSetting = SETTINGS[0];
  const [rawDataDir, dataDirWhere] =
    flags.dataDir !== undefined ? [flags.dataDir, `--${dataDirSetting.flag}`]
    : env[dataDirSetting.env] !== undefined ? [env[dataDirSetting.env], dataDirSetting.env]
    : [DEFAULTS.dataDir, 'data_dir'];
  const dataDir = resolve(parseSetting(directory, rawDataDir, dataDirWhere));
  const file = opts.ignoreFile ? null : readConfigFile(dataDir);
  if (file) {
    const unknown = listFileKeys(file.values).filter((k) => !KNOWN_FILE_KEYS.has(k));
    if (unknown.length) {
      const dotted = unknown.some((k) => k.includes('"'));
      throw new ConfigError(
        `${file.path}: unknown setting ${unknown.map((k) => (k.includes('"') ? k : `"${k}"`)).join(', ')}` +
          (dotted ? '; a setting like bitcoind.enabled is a table: [bitcoind] enabled = … in TOML, {"bitcoind": {"enabled": …}} in JSON' : ''),
      );
    }
    if ('data_dir' in file.values) {
      throw new ConfigError(`${file.path}: data_dir cannot be set in the file, which is read from the data directory itself; use --data-dir or TILL_DATA_DIR`);
    }
    layers.push([file.path, (s) => readNested(file.values, s.file)]);
  }
  layers.push(['environment', (s) => (env[s.env] === undefined ? undefined : env[s.env])]);
  layers.push(['flag', (s) => flags[s.key]]);

  const config: Record<string, unknown> = { ...DEFAULTS, ...(opts.demo ? DEMO_DEFAULTS : {}) };
  for (const s of SETTINGS) {
    for (const [source, read] of layers) {
      const raw = read(s);
      if (raw === undefined) continue;
      const where = source === 'environment' ? s.env : source === 'flag' ? `--${s.flag}` : `${source}: ${s.file}`;
      config[s.key] = parseSetting(s.parse as Parser<unknown>, raw, where);
    }
  }
  config.dataDir = dataDir;
  return config as unknown as Config;
}

/** The settings that differ from the defaults, as till.toml nests them; `masked` for printing (secrets as in `config show`). */
export function settingsTable(config: Config, masked = false): Record<string, unknown> {
  const table: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    if (s.key === 'dataDir' || config[s.key] === DEFAULTS[s.key]) continue;
    const parts = s.file.split('.');
    let at = table;
    for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Record<string, unknown>;
    at[parts.at(-1)!] = masked && s.secret ? '********' : config[s.key];
  }
  return table;
}

/** Writes the data directory's till.toml with the settings of `config` that differ from the defaults; returns its path. */
export function writeSettingsFile(config: Config, comment: string): string {
  const path = join(config.dataDir, 'till.toml');
  writeFileSync(path, `# ${comment} Every setting: docs/CONFIG.md\n${stringifyToml(settingsTable(config))}\n`, { mode: 0o600 });
  // The mode above applies to a new file only: one replaced (init --force) may hold an RPC password now.
  chmodSync(path, 0o600);
  return path;
}

/** The config as printed by `till config show`: secrets masked. */
export function describeConfig(config: Config): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const s of SETTINGS) {
    const value = config[s.key];
    out[s.file] = s.secret && value !== '' ? '********' : value;
  }
  return out;
}

/** Base URL for links: the public URL, else the listen address. */
export function publicBaseUrl(config: Config, boundPort?: number): string {
  if (config.publicUrl) return config.publicUrl;
  const h = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${h}:${boundPort ?? config.port}`;
}
