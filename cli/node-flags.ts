// Node flags Till runs with: the shebang of cli/till.ts and the package.json
// scripts pass them (a test keeps the three the same), the benches too.
//
// --max-semi-space-size caps V8's young generation (per semi-space, MiB). Left
// to itself V8 grows it to ~50 MiB during a burst of long-lived connections
// (thousands of checkout streams opening) and keeps the memory; at 8 a till
// holding 10,000 streams stays ~90 MiB smaller, for a few percent more time in
// minor garbage collections.
export const NODE_FLAGS = ['--max-semi-space-size=8'] as const;
