import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runSoak, type SoakResult } from './soak/driver.ts';
import type { SoakScript } from './soak/steps.ts';

// Random steps (pay, fee-bump, mine, reorg, advance the clock, stop and start
// Till, cancel) against the fake node, each followed by a comparison of every
// invoice, payment and webhook event with an independent model of the rules
// (soak/oracle.ts). The default seeds are fixed, so every run is the same.
//   TILL_SOAK_SEEDS=100:50 TILL_SOAK_STEPS=60   seeds 100..149, 60 steps each
//   TILL_SOAK_REPLAY=/tmp/till-soak-….json      a failing run's saved script
const DEFAULT_SEEDS = [1, 2, 3, 5, 7, 8, 10, 11];
const DEFAULT_STEPS = 35;

interface Run {
  seed: number;
  script?: SoakScript;
}

function runsFromEnv(env: NodeJS.ProcessEnv): { runs: Run[]; steps: number } {
  const steps = env.TILL_SOAK_STEPS ? positiveInt(env.TILL_SOAK_STEPS, 'TILL_SOAK_STEPS') : DEFAULT_STEPS;
  if (env.TILL_SOAK_REPLAY) {
    const saved = JSON.parse(readFileSync(env.TILL_SOAK_REPLAY, 'utf8')) as { seed: number; script: SoakScript };
    return { runs: [{ seed: saved.seed, script: saved.script }], steps };
  }
  if (!env.TILL_SOAK_SEEDS) return { runs: DEFAULT_SEEDS.map((seed) => ({ seed })), steps };
  const [start, count = '1'] = env.TILL_SOAK_SEEDS.split(':');
  const first = positiveInt(start!, 'TILL_SOAK_SEEDS start');
  return { runs: Array.from({ length: positiveInt(count, 'TILL_SOAK_SEEDS count') }, (_, i) => ({ seed: first + i })), steps };
}

function positiveInt(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${what} must be a positive integer, not ${JSON.stringify(text)}`);
  return n;
}

/** Saves the failing script to the OS temp dir (never the repo) and says how to replay it. */
function failureReport(r: SoakResult): string {
  const file = join(tmpdir(), `till-soak-seed-${r.seed}-${process.pid}.json`);
  writeFileSync(file, JSON.stringify({ seed: r.seed, script: r.script, failure: r.failure }, null, 1));
  return [
    `soak seed ${r.seed} failed at step ${r.script.steps.length - 1}:`,
    ...r.trace,
    'Till differs from the oracle:',
    r.failure,
    `replay: TILL_SOAK_REPLAY=${file} node --test test/integration/chain/soak.test.ts`,
  ].join('\n');
}

const { runs, steps } = runsFromEnv(process.env);

describe('chain soak: random steps against the oracle (fake node)', () => {
  for (const run of runs) {
    test(`seed ${run.seed}${run.script ? ' (replay)' : ''}`, async (t) => {
      const r = await runSoak(t, run.seed, { steps, script: run.script });
      t.diagnostic(`${r.script.steps.length} steps; events ${JSON.stringify(r.events)}`);
      if (!r.ok) throw new Error(failureReport(r));
    });
  }
});
