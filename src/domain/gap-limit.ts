// The gap-limit rule (DESIGN.md "Gap limit"). A wallet restored from its seed
// stops looking after `gap_limit` unused addresses in a row: Till must not
// hand out so many unfunded ones that a payment lands where the wallet never
// looks.

/** Creation stops this many indexes short of the wallet's gap limit. */
export const GAP_MARGIN = 5;
/** Funding seen this recently lets creation go on past the margin (the wallet has just moved its window). */
export const FUNDING_GRACE_MS = 24 * 60 * 60 * 1000;

export interface GapState {
  gapLimit: number;
  nextIndex: number;
  lastFundedIndex: number | null;
  lastFundedAt: number | null;
}

/** How many more indexes can be handed out before the rule bites. */
export function gapHeadroom(x: GapState): number {
  const unfundedRun = x.nextIndex - ((x.lastFundedIndex ?? -1) + 1);
  return x.gapLimit - GAP_MARGIN - unfundedRun;
}

/** Whether a live invoice is refused (409 gap_limit_exceeded) at `now`. */
export function gapLimitReached(x: GapState, now: number): boolean {
  return gapHeadroom(x) <= 0 && !(x.lastFundedAt !== null && now - x.lastFundedAt < FUNDING_GRACE_MS);
}
