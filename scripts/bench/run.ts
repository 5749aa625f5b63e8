// Runs Till's benchmarks in sequence and prints one table: each figure with
// its target and PASS/MISS, plus the machine. Targets are checked here, never
// in tests. With --write, the figures section of docs/PERFORMANCE.md (between
// <!-- bench:begin --> and <!-- bench:end -->) is rewritten; the benches that
// did not run keep their recorded block.
// Run: npm run bench [-- --only invoices,chain] [--write]
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeMachine, formatMarkdown, formatTable, machineLine, type BenchRow, type Machine } from './support/results.ts';

const BENCHES = ['derive', 'invoices', 'webhooks', 'chain', 'checkout'] as const;
type BenchName = (typeof BENCHES)[number];

const DOC = fileURLToPath(new URL('../../docs/PERFORMANCE.md', import.meta.url));
const BEGIN = '<!-- bench:begin -->';
const END = '<!-- bench:end -->';

interface Options {
  only: BenchName[];
  write: boolean;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { only: [...BENCHES], write: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--write') opts.write = true;
    else if (arg === '--only' || arg.startsWith('--only=')) {
      const list = arg === '--only' ? argv[++i] : arg.slice('--only='.length);
      if (!list) throw new Error('--only needs a comma-separated list of benches');
      const names = list.split(',').map((n) => n.trim()).filter(Boolean);
      const unknown = names.filter((n) => !(BENCHES as readonly string[]).includes(n));
      if (unknown.length) throw new Error(`unknown bench ${unknown.join(', ')}; known: ${BENCHES.join(', ')}`);
      opts.only = BENCHES.filter((b) => names.includes(b));
    } else throw new Error(`unknown argument ${arg}; usage: run.ts [--only ${BENCHES.join(',')}] [--write]`);
  }
  return opts;
}

type RunBench = () => Promise<BenchRow[]>;

/** The bench's run function (scripts/bench/<name>.ts exports run<Name>Bench), or null when the file is absent. */
async function loadBench(name: BenchName): Promise<RunBench | null> {
  const url = new URL(`./${name}.ts`, import.meta.url);
  if (!existsSync(url)) return null;
  const fnName = `run${name[0]!.toUpperCase()}${name.slice(1)}Bench`;
  const fn = ((await import(url.href)) as Record<string, unknown>)[fnName];
  if (typeof fn !== 'function') throw new Error(`scripts/bench/${name}.ts does not export ${fnName}()`);
  return fn as RunBench;
}

interface Outcome {
  bench: BenchName;
  rows: BenchRow[];
  machine: Machine;
}

/** Replaces the recorded blocks of the benches that ran; keeps the others and everything outside the markers. */
function writeDoc(outcomes: Outcome[]): void {
  const text = readFileSync(DOC, 'utf8');
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${DOC} has no ${BEGIN} … ${END} section to rewrite`);
  const recorded = new Map<string, string>();
  for (const block of text.slice(begin + BEGIN.length, end).split(/^(?=### )/m)) {
    const name = /^### (\S+)/.exec(block)?.[1];
    if (name) recorded.set(name, block.trim());
  }
  for (const o of outcomes) recorded.set(o.bench, formatMarkdown(o.bench, o.rows, o.machine));
  const blocks = BENCHES.flatMap((b) => (recorded.has(b) ? [recorded.get(b)!] : []));
  writeFileSync(DOC, `${text.slice(0, begin)}${BEGIN}\n\n${blocks.join('\n\n')}\n\n${text.slice(end)}`);
}

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const outcomes: Outcome[] = [];
  const failed: string[] = [];
  console.log(machineLine(describeMachine()));
  for (const bench of opts.only) {
    const run = await loadBench(bench);
    if (!run) {
      console.log(`${bench}: skipped, scripts/bench/${bench}.ts does not exist yet`);
      continue;
    }
    const machine = describeMachine();
    const started = performance.now();
    console.error(`\n== ${bench}`);
    try {
      outcomes.push({ bench, rows: await run(), machine });
      console.error(`== ${bench} done in ${Math.round((performance.now() - started) / 1000)} s`);
    } catch (err) {
      failed.push(bench);
      console.error(`== ${bench} failed:`, err);
    }
  }
  console.log(`\n${formatTable(outcomes.map((o) => ({ bench: o.bench, rows: o.rows })))}`);
  if (failed.length) console.log(`\nFailed: ${failed.join(', ')} (see the errors above)`);
  if (opts.write && outcomes.length) {
    writeDoc(outcomes);
    console.log(`\nWrote the figures of ${outcomes.map((o) => o.bench).join(', ')} to docs/PERFORMANCE.md`);
  }
  return failed.length ? 1 : 0;
}

if (import.meta.main) {
  const code = await main();
  // Exit now: a handle some bench left open must not keep the run alive.
  process.exit(code);
}
