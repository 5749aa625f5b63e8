import { cpus, loadavg, release, totalmem, type } from 'node:os';

/** One printed figure. `target` reads like "≥ 10000" or "≤ 10"; `note` says how to read the figure. */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  target?: string;
  note?: string;
}

export type Verdict = 'PASS' | 'MISS' | '';

/** PASS/MISS of a row against its target; '' when it has none. */
export function verdictOf(row: BenchRow): Verdict {
  if (!row.target) return '';
  const m = /^(≥|≤|>=|<=)\s*([\d.,]+)/.exec(row.target.trim());
  if (!m) throw new Error(`bench row "${row.name}": target "${row.target}" must start with ≥ or ≤ and a number`);
  const bound = Number(m[2]!.replace(/,/g, ''));
  const atLeast = m[1] === '≥' || m[1] === '>=';
  return (atLeast ? row.value >= bound : row.value <= bound) ? 'PASS' : 'MISS';
}

export function formatValue(value: number): string {
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits });
}

/** "≥ 10000" as "≥ 10,000 req/s". */
function formatTarget(row: BenchRow): string {
  if (!row.target) return '';
  return row.target.replace(/[\d.,]+/, (n) => Number(n.replace(/,/g, '')).toLocaleString('en-US')) + ' ' + row.unit;
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  kernel: string;
  date: string;
  /** 1-minute load average when the bench started: the machine is shared, this says how busy it was. */
  load: number;
}

export function describeMachine(now = new Date()): Machine {
  const list = cpus();
  return {
    cpu: list[0]?.model.trim() ?? 'unknown CPU',
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    kernel: `${type()} ${release()}`,
    date: now.toISOString(),
    load: Math.round(loadavg()[0]! * 100) / 100,
  };
}

export function machineLine(m: Machine): string {
  return `${m.cpu} × ${m.cores} cores, ${m.memoryGiB} GiB RAM, Node ${m.node}, ${m.kernel}; ${m.date}, load average ${m.load}`;
}

/** A plain-text table: bench, figure, value, unit, target, PASS/MISS. Notes follow, numbered. */
export function formatTable(sections: Array<{ bench: string; rows: BenchRow[] }>): string {
  const header = ['bench', 'figure', 'value', 'unit', 'target', 'result'];
  const lines: string[][] = [];
  const notes: string[] = [];
  for (const { bench, rows } of sections) {
    for (const row of rows) {
      let name = row.name;
      if (row.note) {
        notes.push(row.note);
        name += ` [${notes.length}]`;
      }
      lines.push([bench, name, formatValue(row.value), row.unit, formatTarget(row), verdictOf(row)]);
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const render = (cells: string[]) => cells.map((c, i) => (i === 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const out = [render(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(render)];
  if (notes.length) out.push('', ...notes.map((n, i) => `[${i + 1}] ${n}`));
  return out.join('\n');
}

/** The recorded block of one bench in docs/PERFORMANCE.md. */
export function formatMarkdown(bench: string, rows: BenchRow[], machine: Machine): string {
  const notes: string[] = [];
  const body = rows.map((row) => {
    let name = row.name;
    if (row.note) {
      notes.push(row.note);
      name += ` [${notes.length}]`;
    }
    const verdict = verdictOf(row);
    return `| ${name} | ${formatValue(row.value)} ${row.unit} | ${formatTarget(row)} | ${verdict === 'MISS' ? '**MISS**' : verdict} |`;
  });
  return [
    `### ${bench}`,
    '',
    `Recorded ${machine.date.slice(0, 16).replace('T', ' ')} UTC on ${machine.cpu} × ${machine.cores} cores, ${machine.memoryGiB} GiB RAM, Node ${machine.node}, ${machine.kernel}; 1-minute load average ${machine.load} when it started.`,
    '',
    '| figure | value | target | result |',
    '|---|---:|---|---|',
    ...body,
    ...(notes.length ? ['', ...notes.map((n, i) => `${i + 1}. ${n}`)] : []),
  ].join('\n');
}

/** What a bench file prints when run by itself. */
export function printResults(bench: string, rows: BenchRow[]): void {
  console.log(`\n${machineLine(describeMachine())}\n`);
  console.log(formatTable([{ bench, rows }]));
}

/** Sorted-sample percentile (nearest rank). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** The row with `reason` added to its note when it misses its target: the output says why, not only that. */
export function explainMiss(row: BenchRow, reason: string): BenchRow {
  if (verdictOf(row) !== 'MISS') return row;
  return { ...row, note: `${row.note ? row.note + ' ' : ''}MISSED because ${reason}` };
}
