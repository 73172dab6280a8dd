// Lease-based leader election, as client-go's leaderelection package: the
// leader renews a coordination.k8s.io Lease every retry period; others watch
// it and take over once it has not been renewed for a lease duration
// (measured on their own clock from when they last saw it change, so clock
// skew between nodes does not matter). Every write carries the Lease's
// resourceVersion, so two candidates can never both win a race.
//
// Two leaders must never act at once. The leader stops leading when its
// renew deadline passes — on a timer, not when a hung request finally
// returns: every request of an attempt is aborted at the deadline. Its
// deadline is counted from the *start* of its last successful renewal and
// candidates count the lease duration from when they *saw* that renewal, so
// the old leader has stopped (renewDeadline < leaseDuration) before anyone
// else can acquire the Lease. A leader that lost the Lease does not campaign
// again: the process is meant to exit and start afresh (controller-runtime's
// "leader election lost").
import { setTimeout as sleep } from "node:timers/promises";
import { builtin, isAlreadyExists, isConflict, isNotFound, kubeMicroTime, type KubeClient, type KubeObject } from "../client/index.ts";

/** Time as the elector sees it; a test passes a fake one to drive deadlines without waiting. */
export interface ElectionClock {
  /** Milliseconds since the epoch (also written into the Lease). */
  now(): number;
  /** Resolves true after `ms`, or false as soon as `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<boolean>;
}

export const systemElectionClock: ElectionClock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleep(ms, true, { signal }).catch(() => false),
};

/** The abort reason of work stopped because this process is no longer the leader. */
export class LeadershipLostError extends Error {
  override name = "LeadershipLostError";
  constructor(message = "this manager lost its leader election Lease") {
    super(message);
  }
}

export interface LeaderElectionOptions {
  /** Namespace of the Lease. */
  namespace: string;
  /** Name of the Lease, e.g. "stateward-manager". */
  name: string;
  /** Unique per candidate; defaults to "<hostname>_<random>". */
  identity: string;
  /** How long a lease is valid without renewal. Defaults to 15 s (controller-runtime). */
  leaseDurationMs?: number;
  /**
   * The leader gives up if it could not renew for this long, counted from the start of its last
   * successful renewal; a request still running then is aborted. Must be below leaseDurationMs.
   * Defaults to 10 s (controller-runtime).
   */
  renewDeadlineMs?: number;
  /** Time between attempts. Defaults to 2 s (controller-runtime). */
  retryPeriodMs?: number;
  onStartedLeading: () => void;
  /** Called once when leadership is lost (not when released on shutdown); the elector stops campaigning. */
  onStoppedLeading: () => void;
  onError?: (err: unknown) => void;
  /** Defaults to the system clock. */
  clock?: ElectionClock;
}

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly opts: Required<Omit<LeaderElectionOptions, "onError">> & Pick<LeaderElectionOptions, "onError">;
  private readonly clock: ElectionClock;
  private readonly stopper = new AbortController();
  private leading = false;
  private lost = false;
  /** Start of the last successful renewal: the leader's deadline counts from here. */
  private lastRenewMs = 0;
  private acquiredAtMs: number | undefined;
  private observed: { record: string; atMs: number } | undefined;
  private current: Lease | undefined;
  private loop: Promise<void> | undefined;

  constructor(client: KubeClient, opts: LeaderElectionOptions) {
    this.client = client;
    // Field by field: a caller passing `retryPeriodMs: undefined` (the manager does, for "not set") gets the default,
    // not NaN — which setTimeout takes for 1 ms, renewing the Lease in a tight loop.
    this.opts = {
      ...opts,
      leaseDurationMs: opts.leaseDurationMs ?? 15_000,
      renewDeadlineMs: opts.renewDeadlineMs ?? 10_000,
      retryPeriodMs: opts.retryPeriodMs ?? 2_000,
      clock: opts.clock ?? systemElectionClock,
    };
    this.clock = this.opts.clock;
    if (this.opts.renewDeadlineMs >= this.opts.leaseDurationMs) {
      throw new Error(`the renew deadline (${this.opts.renewDeadlineMs} ms) must be shorter than the lease duration (${this.opts.leaseDurationMs} ms)`);
    }
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Milliseconds until any previous holder has certainly stopped acting: a lease duration after
   * this process acquired the Lease (a full lease duration while not leading). The previous holder
   * gave up at its renew deadline, before this process could acquire; the extra wait covers its
   * requests still in flight and a process paused past its own timers.
   */
  previousLeaderFenceMs(): number {
    if (!this.leading || this.acquiredAtMs === undefined) return this.opts.leaseDurationMs;
    return Math.max(0, this.acquiredAtMs + this.opts.leaseDurationMs - this.clock.now());
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops competing; a leader releases the Lease so another candidate takes over at once. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.loop;
    if (this.leading) {
      this.leading = false;
      await this.release().catch((err: unknown) => this.opts.onError?.(err));
    }
  }

  private loseLeadership(): void {
    if (!this.leading) return;
    this.leading = false;
    this.lost = true;
    this.opts.onStoppedLeading();
  }

  private async run(): Promise<void> {
    const stopped = this.stopper.signal;
    while (!stopped.aborted && !this.lost) {
      const started = this.clock.now();
      // Every attempt ends by a deadline: the leader's renew deadline, or for a candidate as long
      // from now (a hung request must not keep it from trying again). At the leader's deadline it
      // stops leading at once, whatever its requests are doing.
      const deadline = this.leading ? this.lastRenewMs + this.opts.renewDeadlineMs : started + this.opts.renewDeadlineMs;
      const attempt = new AbortController();
      const attemptDone = new AbortController();
      void this.clock.sleep(Math.max(0, deadline - started), AbortSignal.any([attemptDone.signal, stopped])).then((elapsed) => {
        if (!elapsed) return;
        attempt.abort(new Error("the leader election attempt did not finish within the renew deadline"));
        this.loseLeadership();
      });
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew(started, AbortSignal.any([attempt.signal, stopped]));
      } catch (err) {
        if (!stopped.aborted) this.opts.onError?.(err);
      } finally {
        attemptDone.abort();
      }
      if (this.lost || stopped.aborted) break;
      if (ok && !attempt.signal.aborted) {
        this.lastRenewMs = started;
        if (!this.leading) {
          this.leading = true;
          this.acquiredAtMs = this.clock.now();
          this.opts.onStartedLeading();
        }
      } else if (this.leading && this.clock.now() >= this.lastRenewMs + this.opts.renewDeadlineMs) {
        this.loseLeadership();
        break;
      }
      await this.clock.sleep(this.opts.retryPeriodMs * (this.leading ? 1 : 1 + Math.random() * 0.2), stopped);
    }
  }

  private spec(now: number, transitions: number, acquireTime?: string) {
    return {
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: Math.ceil(this.opts.leaseDurationMs / 1000),
      acquireTime: acquireTime ?? kubeMicroTime(now),
      renewTime: kubeMicroTime(now),
      leaseTransitions: transitions,
    };
  }

  private async tryAcquireOrRenew(now: number, signal: AbortSignal): Promise<boolean> {
    let lease: Lease;
    try {
      lease = await this.client.get<Lease>(builtin.lease, this.opts.namespace, this.opts.name, { signal });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        this.current = await this.client.create<Lease>(builtin.lease, {
          metadata: { name: this.opts.name, namespace: this.opts.namespace },
          spec: this.spec(now, 0),
        }, { signal });
        this.observed = { record: JSON.stringify(this.current.spec), atMs: this.clock.now() };
        return true;
      } catch (createErr) {
        if (isAlreadyExists(createErr)) return false;
        throw createErr;
      }
    }
    // A change counts from when this candidate saw it (after the answer), never earlier.
    const seenAt = this.clock.now();
    const record = JSON.stringify(lease.spec ?? {});
    if (!this.observed || this.observed.record !== record) this.observed = { record, atMs: seenAt };
    const holder = lease.spec?.holderIdentity ?? "";
    const iHold = holder === this.opts.identity;
    const durationMs = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    if (holder && !iHold && seenAt < this.observed.atMs + durationMs) return false;
    const transitions = (lease.spec?.leaseTransitions ?? 0) + (iHold ? 0 : 1);
    try {
      this.current = await this.client.update<Lease>(builtin.lease, {
        ...lease,
        spec: this.spec(now, transitions, iHold ? lease.spec?.acquireTime : undefined),
      }, { signal });
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
    this.observed = { record: JSON.stringify(this.current.spec), atMs: this.clock.now() };
    return true;
  }

  private async release(): Promise<void> {
    // Bounded like a renewal: a shutdown must not hang on an unreachable API server.
    const signal = AbortSignal.timeout(this.opts.renewDeadlineMs);
    const lease = await this.client.get<Lease>(builtin.lease, this.opts.namespace, this.opts.name, { signal });
    if (lease.spec?.holderIdentity !== this.opts.identity) return;
    const now = this.clock.now();
    await this.client.update<Lease>(builtin.lease, {
      ...lease,
      // client-go's ReleaseOnCancel: an empty holder and a 1 s duration let the next candidate in immediately.
      spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: kubeMicroTime(now) },
    }, { signal });
  }
}
