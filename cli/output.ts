import { type Command, InvalidArgumentError, type Option } from 'commander';
import { UPGRADE_NOTICE } from '../src/db/migrate.ts';
import { IN_BINARY } from '../src/embedded.ts';

// Every command prints either human lines or, with --json, one JSON document
// on stdout; errors are one line on stderr and a non-zero exit code.

export interface OutputOptions {
  json?: boolean;
}

/** How the user runs Till, for the commands Till suggests: the installed binary, or the checkout's script. */
export const TILL_COMMAND = IN_BINARY ? 'till' : 'npm run till --';

export function emit(opts: OutputOptions, data: unknown, human: () => string): void {
  process.stdout.write(opts.json ? JSON.stringify(data, null, 2) + '\n' : escapeControls(human()) + '\n');
}

export function fail(message: string, code = 1): never {
  process.stderr.write(`till: ${oneLine(message)}\n`);
  process.exit(code);
}

/** What the user should know though the command did its work: one line on stderr, "till: warning: …" (never on stdout, which --json keeps for its document). */
export function warn(message: string): void {
  process.stderr.write(`till: warning: ${oneLine(message)}\n`);
}

function oneLine(message: string): string {
  return escapeControls(redactPrivateKeys(message).replace(/\s*\n\s*/g, ' '));
}

/**
 * Text for a terminal with its control characters shown, not obeyed: lines
 * carry what others wrote (a webhook receiver's answer, an endpoint's URL or
 * description), and an escape sequence in them could clear the screen, fake
 * lines, retitle the window or plant a link. Newlines and tabs stay; bidi
 * overrides go too, as they reorder what is shown.
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * An extended private key (xprv, tprv, zprv, …: 111 base58 characters) pasted into the wrong argument, or the
 * start of one: messages cut what they echo (an id to 64 characters), and a cut key still holds its chain code.
 */
const EXTENDED_PRIVATE_KEY = /\b[xyzXYZtuvTUV]prv[1-9A-HJ-NP-Za-km-z]{16,}/g;

/** Error text with any extended private key cut out: an error message echoes what was typed, and Till never shows a private key. */
export function redactPrivateKeys(text: string): string {
  return text.replace(EXTENDED_PRIVATE_KEY, (key) => `${key.slice(0, 4)}…(a private key: removed)`);
}

export function parseIntegerOption(name: string, min: number, max: number) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`${name} must be from ${min} to ${max}`);
    return n;
  };
}

/**
 * Options a command cannot run without. Not commander's requiredOption: commander
 * checks those before it looks for unknown options, so a mistyped option
 * (--nme for --name) was reported as the option it was meant to be, missing,
 * never as the typo. These are checked after, by checkMandatoryOptions.
 */
const MANDATORY = new WeakSet<Option>();

export function mandatory(option: Option): Option {
  MANDATORY.add(option);
  return option;
}

export function isMandatory(option: Option): boolean {
  return MANDATORY.has(option);
}

/** A preAction hook: the mandatory options of the command about to run (and of its parents), in commander's words. */
export function checkMandatoryOptions(_hooked: Command, actionCommand: Command): void {
  for (let cmd: Command | null = actionCommand; cmd; cmd = cmd.parent) {
    for (const option of cmd.options) {
      if (isMandatory(option) && cmd.getOptionValue(option.attributeName()) === undefined) cmd.error(`required option '${option.flags}' not specified`);
    }
  }
}

/** "1 try", "3 tries": a count and its noun. */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Left-aligned columns for list output. */
export function table(rows: string[][]): string {
  if (rows.length === 0) return '(none)';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

/** A command's note on stderr that it upgrades the database first (src/db/migrate.ts). */
export function tellUpgrade(from: number, to: number): void {
  process.stderr.write(`till: ${UPGRADE_NOTICE}: schema ${from} to ${to}\n`);
}
