// How backups and restores report progress: a copy of their progress about
// once a second while they run, and at once at the steps that matter.

/** How often a long run reports progress, unless a step forces it. */
const reportIntervalMs = 1000;

/**
 * A report function for `progress`: it calls `onProgress` with a copy,
 * unless the last call was less than a second ago and `force` is not set.
 */
export function progressReporter<P extends object>(progress: P, onProgress: ((progress: P) => void) | undefined, now: () => number = () => performance.now()): (force?: boolean) => void {
  let lastReport = 0;
  return (force = false) => {
    if (!onProgress) return;
    const at = now();
    if (!force && at - lastReport < reportIntervalMs) return;
    lastReport = at;
    onProgress({ ...progress });
  };
}
