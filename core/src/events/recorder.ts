// An event recorder on events.k8s.io/v1 — what `kubectl describe` shows under
// "Events". A repeat of the same event (same object, type, reason, note)
// within the series window updates the existing Event's series count instead
// of creating a new object, and at most once per `repeatIntervalMs`, so an
// object stuck in a retry loop cannot flood the API server with events.
import { hostname } from "node:os";
import { builtin, kubeMicroTime, type KubeClient, type KubeObject } from "../client/index.ts";

export type EventType = "Normal" | "Warning";

export interface EventRecorderOptions {
  /** e.g. "stateward.io/database-user". */
  reportingController: string;
  /** Defaults to the host name (the pod name in a cluster). */
  reportingInstance?: string;
  /** Repeats within this window join one Event's series. Defaults to 6 min (the events.k8s.io series window client-go uses). */
  seriesWindowMs?: number;
  /** Minimum time between two API writes for the same repeated event. Defaults to 30 s. */
  repeatIntervalMs?: number;
  now?: () => number;
  onError?: (err: unknown) => void;
}

interface Seen {
  name: string;
  namespace: string;
  count: number;
  firstMs: number;
  lastWriteMs: number;
}

const MAX_NOTE = 1024;
/** Events `emit` lets wait to be written, at most (client-go's broadcaster buffers 1,000 as well). */
const MAX_QUEUED = 1_000;

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly opts: Required<Omit<EventRecorderOptions, "onError">> & Pick<EventRecorderOptions, "onError">;
  private readonly seen = new Map<string, Seen>();
  /** The last write `emit` queued; writes run one after the other, in the order emitted. */
  private queue: Promise<unknown> = Promise.resolve();
  private queued = 0;

  constructor(client: KubeClient, opts: EventRecorderOptions) {
    this.client = client;
    this.opts = {
      reportingController: opts.reportingController,
      reportingInstance: opts.reportingInstance ?? hostname(),
      seriesWindowMs: opts.seriesWindowMs ?? 6 * 60_000,
      repeatIntervalMs: opts.repeatIntervalMs ?? 30_000,
      now: opts.now ?? Date.now,
      onError: opts.onError,
    };
  }

  /**
   * Records an event about `regarding`. Never throws: an event is best effort
   * and must not fail the reconcile that reports it. Resolves false when it
   * could not be written (e.g. its namespace is being deleted).
   */
  async record(regarding: KubeObject, type: EventType, reason: string, note: string, action = reason): Promise<boolean> {
    try {
      await this.write(regarding, type, reason, note.length > MAX_NOTE ? `${note.slice(0, MAX_NOTE - 3)}...` : note, action);
      return true;
    } catch (err) {
      this.opts.onError?.(err);
      return false;
    }
  }

  /**
   * Records an event in the background, as client-go's recorder does: the reconcile that reports
   * it does not wait for the API write (one round trip less in every reconcile that changed
   * something). Writes run one at a time, in the order emitted, so a repeat still joins its
   * series. When MAX_QUEUED events wait already (an API server that stopped answering), this one
   * is dropped and reported to `onError`. `flush` waits for what was emitted.
   */
  emit(regarding: KubeObject, type: EventType, reason: string, note: string, action = reason): void {
    if (this.queued >= MAX_QUEUED) {
      this.opts.onError?.(new Error(`event ${reason} dropped: ${MAX_QUEUED} events are waiting to be written`));
      return;
    }
    this.queued++;
    this.queue = this.queue.then(() => this.record(regarding, type, reason, note, action)).finally(() => this.queued--);
  }

  /** Resolves when every event emitted so far was written (or failed to be). */
  async flush(): Promise<void> {
    await this.queue;
  }

  private async write(regarding: KubeObject, type: EventType, reason: string, note: string, action: string): Promise<void> {
    const now = this.opts.now();
    const namespace = regarding.metadata.namespace ?? "default";
    const key = `${regarding.metadata.uid ?? regarding.metadata.name}|${type}|${reason}|${note}`;
    const seen = this.seen.get(key);
    if (seen && now - seen.firstMs < this.opts.seriesWindowMs) {
      seen.count++;
      if (now - seen.lastWriteMs < this.opts.repeatIntervalMs) return;
      seen.lastWriteMs = now;
      await this.client.patch(builtin.event, seen.namespace, seen.name, {
        series: { count: seen.count, lastObservedTime: kubeMicroTime(now) },
      });
      return;
    }
    const created = await this.client.create(builtin.event, {
      // client-go's naming: "<object>.<unique hex>" (a generateName ending in "." is not a valid name prefix):
      // the time, and four hex digits against two Events of one object in the same millisecond. They need
      // to be unlikely to repeat, not unpredictable: Math.random, not a crypto call per Event.
      metadata: { name: `${regarding.metadata.name ?? "object"}.${now.toString(16)}${uniqueHex()}`, namespace },
      eventTime: kubeMicroTime(now),
      reportingController: this.opts.reportingController,
      reportingInstance: this.opts.reportingInstance,
      action,
      reason,
      note,
      type,
      regarding: {
        apiVersion: regarding.apiVersion,
        kind: regarding.kind,
        name: regarding.metadata.name,
        namespace: regarding.metadata.namespace,
        uid: regarding.metadata.uid,
        resourceVersion: regarding.metadata.resourceVersion,
      },
    } as KubeObject);
    // Deleted first, so that the Map's order (insertion order) stays the order of firstMs.
    this.seen.delete(key);
    this.seen.set(key, { name: created.metadata.name!, namespace, count: 1, firstMs: now, lastWriteMs: now });
    this.prune(now);
  }

  /**
   * Forgets the series that left the window, so memory stays bounded: the oldest
   * first, stopping at the first one still in it. (A scan of every series on every
   * new Event cost the manager 0.4 s of CPU per 1,000 DatabaseUsers: docs/performance.md.)
   */
  private prune(now: number): void {
    for (const [key, s] of this.seen) {
      if (now - s.firstMs < this.opts.seriesWindowMs) return;
      this.seen.delete(key);
    }
  }
}

/** Four hex digits for an Event's name (see EventRecorder's create). */
function uniqueHex(): string {
  return Math.floor(Math.random() * 0x10000)
    .toString(16)
    .padStart(4, "0");
}
