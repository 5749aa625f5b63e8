import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { refillAddressPool } from '../../../src/services/address-pool.ts';
import { openSeedContext } from './seed.ts';

// Address derivation (~5,000-7,000 a second per core) is what creation does
// in line once an xpub's pool is empty, so benchmarks pre-derive pools with
// Till's own refillAddressPool, one worker thread per core.

interface Job {
  dataDir: string;
  xpubIds: string[];
  perXpub: number;
}

async function refill(job: Job): Promise<number> {
  const ctx = openSeedContext(job.dataDir);
  try {
    let added = 0;
    for (const id of job.xpubIds) added += await refillAddressPool(ctx, id, job.perXpub);
    return added;
  } finally {
    ctx.db.close();
  }
}

/** Fills each xpub's pool to `perXpub` addresses ahead of its next index; returns how many were derived. */
export async function prefillPools(dataDir: string, xpubIds: string[], perXpub: number): Promise<number> {
  const threads = Math.max(1, Math.min(availableParallelism(), xpubIds.length));
  const shares = Array.from({ length: threads }, (_, t) => xpubIds.filter((_, i) => i % threads === t));
  const counts = await Promise.all(
    shares.map(
      (share) =>
        new Promise<number>((resolve, reject) => {
          const worker = new Worker(new URL(import.meta.url), { workerData: { dataDir, xpubIds: share, perXpub } satisfies Job });
          worker.once('message', (n: number) => resolve(n));
          worker.once('error', reject);
          worker.once('exit', (code) => code !== 0 && reject(new Error(`pool worker exited with ${code}`)));
        }),
    ),
  );
  return counts.reduce((a, b) => a + b, 0);
}

if (!isMainThread && parentPort) {
  parentPort.postMessage(await refill(workerData as Job));
}
