// Lease-based leader election, as client-go's leaderelection package: the
// leader renews a coordination.k8s.io Lease every retry period; others watch
// it and take over once it has not been renewed for a lease duration
// (measured on their own clock from when they last saw it change, so clock
// skew between nodes does not matter). Every write carries the Lease's
// resourceVersion, so two candidates can never both win a race.
import { setTimeout as sleep } from "node:timers/promises";
import { builtin, isAlreadyExists, isConflict, isNotFound, type KubeClient, type KubeObject } from "../client/index.ts";

export interface LeaderElectionOptions {
  /** Namespace of the Lease. */
  namespace: string;
  /** Name of the Lease, e.g. "stateward-manager". */
  name: string;
  /** Unique per candidate; defaults to "<hostname>_<random>". */
  identity: string;
  /** How long a lease is valid without renewal. Defaults to 15 s (controller-runtime). */
  leaseDurationMs?: number;
  /** The leader gives up if it could not renew for this long. Defaults to 10 s (controller-runtime). */
  renewDeadlineMs?: number;
  /** Time between attempts. Defaults to 2 s (controller-runtime). */
  retryPeriodMs?: number;
  onStartedLeading: () => void;
  /** Called once when leadership is lost (not when released on shutdown). */
  onStoppedLeading: () => void;
  onError?: (err: unknown) => void;
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

const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly opts: Required<Omit<LeaderElectionOptions, "onError">> & Pick<LeaderElectionOptions, "onError">;
  private readonly stopper = new AbortController();
  private leading = false;
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
    };
  }

  isLeader(): boolean {
    return this.leading;
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

  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    let lastRenewMs = Date.now();
    while (!signal.aborted) {
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        this.opts.onError?.(err);
      }
      const now = Date.now();
      if (ok) {
        lastRenewMs = now;
        if (!this.leading) {
          this.leading = true;
          this.opts.onStartedLeading();
        }
      } else if (this.leading && now - lastRenewMs >= this.opts.renewDeadlineMs) {
        this.leading = false;
        this.opts.onStoppedLeading();
      }
      await sleep(this.opts.retryPeriodMs * (this.leading ? 1 : 1 + Math.random() * 0.2), undefined, { signal }).catch(() => undefined);
    }
  }

  private spec(now: number, transitions: number, acquireTime?: string) {
    return {
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: Math.ceil(this.opts.leaseDurationMs / 1000),
      acquireTime: acquireTime ?? microTime(now),
      renewTime: microTime(now),
      leaseTransitions: transitions,
    };
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = Date.now();
    let lease: Lease;
    try {
      lease = await this.client.get<Lease>(builtin.lease, this.opts.namespace, this.opts.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        this.current = await this.client.create<Lease>(builtin.lease, {
          metadata: { name: this.opts.name, namespace: this.opts.namespace },
          spec: this.spec(now, 0),
        });
        this.observed = { record: JSON.stringify(this.current.spec), atMs: now };
        return true;
      } catch (createErr) {
        if (isAlreadyExists(createErr)) return false;
        throw createErr;
      }
    }
    const record = JSON.stringify(lease.spec ?? {});
    if (!this.observed || this.observed.record !== record) this.observed = { record, atMs: now };
    const holder = lease.spec?.holderIdentity ?? "";
    const iHold = holder === this.opts.identity;
    const durationMs = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    if (holder && !iHold && now < this.observed.atMs + durationMs) return false;
    const transitions = (lease.spec?.leaseTransitions ?? 0) + (iHold ? 0 : 1);
    try {
      this.current = await this.client.update<Lease>(builtin.lease, {
        ...lease,
        spec: this.spec(now, transitions, iHold ? lease.spec?.acquireTime : undefined),
      });
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
    this.observed = { record: JSON.stringify(this.current.spec), atMs: now };
    return true;
  }

  private async release(): Promise<void> {
    const lease = await this.client.get<Lease>(builtin.lease, this.opts.namespace, this.opts.name);
    if (lease.spec?.holderIdentity !== this.opts.identity) return;
    const now = Date.now();
    await this.client.update<Lease>(builtin.lease, {
      ...lease,
      // client-go's ReleaseOnCancel: an empty holder and a 1 s duration let the next candidate in immediately.
      spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: microTime(now) },
    });
  }
}
