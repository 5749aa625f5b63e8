import type { Command } from 'commander';
import { systemClock } from '../src/clock.ts';
import { FlagError, loadConfig, SETTINGS, unknownTillVariables, type Config } from '../src/config.ts';
import { openDatabase } from '../src/db/connection.ts';
import { checksBeforeUpgrade, createContext, type Context } from '../src/services/context.ts';
import { tellUpgrade, TILL_COMMAND, warn } from './output.ts';

/** Where commander keeps a flag's value: --data-dir in dataDir, --zmq in zmq (not the setting's key, zmqEndpoint). */
function optionName(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

let variablesChecked = false;

/** Once a process: a TILL_… variable that is no setting (TILL_PROT=9000) is said, not silently ignored. */
function warnOfUnknownVariables(): void {
  if (variablesChecked) return;
  variablesChecked = true;
  const unknown = unknownTillVariables();
  if (unknown.length > 0) warn(`${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} set but Till has no such setting: ignored (the settings and their variables: ${TILL_COMMAND} --help, docs/CONFIG.md)`);
}

/** The config from defaults, file, environment and this invocation's flags. */
export function configFrom(cmd: Command, extra: { demo?: boolean; ignoreFile?: boolean } = {}): Config {
  const opts = cmd.optsWithGlobals() as Record<string, unknown>;
  const flags: Partial<Record<keyof Config, unknown>> = {};
  for (const s of SETTINGS) {
    const v = opts[optionName(s.flag)];
    if (v !== undefined) flags[s.key] = v;
  }
  try {
    const config = loadConfig({ flags, demo: extra.demo, ignoreFile: extra.ignoreFile });
    warnOfUnknownVariables();
    return config;
  } catch (err) {
    // Said as commander's usage errors are: the line, then where the command's help is.
    if (err instanceof FlagError) cmd.error(err.message);
    throw err;
  }
}

/**
 * Opens the data directory for a one-shot admin command; closes it on exit
 * (once a returned promise settles). Only a command that creates (`create`)
 * makes a new database where there is none.
 */
export function withContext<T>(cmd: Command, fn: (ctx: Context) => T, opts: { create?: boolean; replaceLostSecretKey?: boolean } = {}): T {
  const config = configFrom(cmd);
  const db = openDatabase(config.dataDir, {
    synchronous: config.synchronous,
    busyTimeoutMs: config.busyTimeoutMs,
    mustExist: !opts.create,
    beforeUpgrade: checksBeforeUpgrade(config, () => systemClock.now()),
    onUpgrade: tellUpgrade,
  });
  let result: T;
  try {
    result = fn(createContext(db, systemClock, config, { replaceLostSecretKey: opts.replaceLostSecretKey }));
  } catch (err) {
    db.close();
    throw err;
  }
  if (result instanceof Promise) return result.finally(() => db.close()) as T;
  db.close();
  return result;
}
