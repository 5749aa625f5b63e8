import type { Db } from '../db/connection.ts';
import { createMetaRepo } from '../db/meta.ts';
import type { Context } from './context.ts';

// A backup is a copy from the past: restored, it hands out again the
// addresses of every invoice made after it was taken (docs/CONFIG.md,
// "Backups"), and a payment still on its way to one of those would count for
// a new invoice. `till backup` marks its copy with when it was taken and the
// keys then active; `till serve` on a marked database warns, naming each key
// still active and not skipped since (`till xpub skip`), until none is left.
const KEY = 'backup_copy';

export interface BackupCopyMark {
  /** ISO 8601: when the backup was taken. */
  takenAt: string;
  /** Keys whose next receive index may have moved on after the backup. */
  xpubIds: string[];
}

/** Marks a copy of the database (a backup's, not yet opened by any till) as taken at `takenAt`. */
export function markBackupCopy(db: Db, takenAt: number): void {
  // Plain SQL, not the xpubs repo: a backup keeps the schema it was taken with, which may be older than this code's.
  const xpubIds = db.prepare("SELECT id FROM xpubs WHERE status = 'active' ORDER BY id").pluck().all() as string[];
  const meta = createMetaRepo(db);
  if (xpubIds.length === 0) meta.delete(KEY);
  else meta.set(KEY, JSON.stringify({ takenAt: new Date(takenAt).toISOString(), xpubIds } satisfies BackupCopyMark));
}

function readMark(ctx: Context): BackupCopyMark | null {
  const raw = ctx.repos.meta.get(KEY);
  if (raw === null) return null;
  try {
    const mark = JSON.parse(raw) as Partial<BackupCopyMark>;
    // Written by `till backup` only; anything else (an edited row) says nothing sure.
    if (typeof mark.takenAt !== 'string' || Number.isNaN(Date.parse(mark.takenAt)) || !Array.isArray(mark.xpubIds) || !mark.xpubIds.every((id) => typeof id === 'string')) return null;
    return { takenAt: mark.takenAt, xpubIds: mark.xpubIds };
  } catch {
    return null;
  }
}

/** On a restored backup: when it was taken and its keys still active and not skipped since; null otherwise. */
export function keysToSkipAfterRestore(ctx: Context): BackupCopyMark | null {
  const mark = readMark(ctx);
  if (!mark) return null;
  const xpubIds = mark.xpubIds.filter((id) => ctx.repos.xpubs.get(id)?.status === 'active');
  return xpubIds.length > 0 ? { takenAt: mark.takenAt, xpubIds } : null;
}

/** In the transaction that skips indexes of `xpubId`: the restored backup's warning no longer names it. */
export function forgetKeyToSkip(ctx: Context, xpubId: string): void {
  const mark = readMark(ctx);
  if (!mark?.xpubIds.includes(xpubId)) return;
  const xpubIds = mark.xpubIds.filter((id) => id !== xpubId);
  if (xpubIds.length === 0) ctx.repos.meta.delete(KEY);
  else ctx.repos.meta.set(KEY, JSON.stringify({ ...mark, xpubIds }));
}
