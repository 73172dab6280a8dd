// Waiting for work that may never finish. Shutdown waits for reconciles,
// background tasks, queued Events and aborted uploads, but a wait that hangs
// on one stuck request would keep a stopping process alive until Kubernetes
// kills it. Each such wait is bounded, and its timer is cleared as soon as the
// work settles, so a wait that ended early does not hold the event loop open
// for the rest of the bound.

/**
 * Waits for `work` to settle (fulfil or reject), at most `ms` milliseconds.
 * Resolves true when it settled in time, false when the time ran out (the work
 * goes on; its result is ignored). Never rejects.
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = work.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
