// An informer on the raw LIST and WATCH calls (not client-node's ListWatch;
// docs/test-environment.md says why): paged list, then watch from the list's
// resourceVersion with bookmarks; relist on 410 Gone; an inactivity watchdog
// that restarts a silent stream (half-open connections are silent forever);
// jittered exponential backoff between failed attempts; it never stops for
// good until stop() is called.
import { setTimeout as sleep } from "node:timers/promises";
import { ApiError, isGone, objectKey, type KubeClient, type KubeObject, type ResourceType } from "../client/index.ts";
import { Store } from "./store.ts";
import { messageOf } from "../errors/index.ts";

export type InformerEvent<T extends KubeObject> =
  | { type: "add"; obj: T }
  | { type: "update"; obj: T; old: T }
  | { type: "delete"; obj: T };

export type InformerHandler<T extends KubeObject> = (event: InformerEvent<T>) => void;

export interface InformerLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
}

export interface InformerOptions {
  /** Namespace to watch; undefined means all namespaces. */
  namespace?: string;
  /** Server-side label selector (e.g. the manager's `stateward.io/target=x`). */
  labelSelector?: string;
  fieldSelector?: string;
  /** Cache metadata only (PartialObjectMetadata): for kinds whose content must not sit in memory, like Secrets. */
  metadataOnly?: boolean;
  /** Objects per LIST page. Defaults to 500, as client-go's reflector. */
  pageSize?: number;
  /**
   * Server-side timeout of one watch, randomized in [min, 2·min) so that many
   * informers do not reconnect in lockstep. Defaults to 300 s (client-go: 5–10 min).
   */
  minWatchTimeoutSeconds?: number;
  /**
   * A watch that delivered nothing — no event, no bookmark — for this long is
   * presumed dead and restarted. kube-apiserver sends a bookmark about once a
   * minute to watches that ask for them, so 90 s means "a bookmark is late by
   * half its period". Defaults to 90 s.
   */
  inactivityTimeoutMs?: number;
  /** First retry delay after a failure. Defaults to 800 ms (client-go's reflector backoff). */
  initialBackoffMs?: number;
  /** Retry delay cap. Defaults to 30 s (client-go's reflector backoff). */
  maxBackoffMs?: number;
  logger?: InformerLogger;
}

export interface InformerStats {
  lists: number;
  watches: number;
  relistsAfterGone: number;
  watchdogRestarts: number;
  failures: number;
}

const noopLogger: InformerLogger = { info: () => undefined, warn: () => undefined, debug: () => undefined };

export class Informer<T extends KubeObject = KubeObject> {
  readonly store = new Store<T>();
  readonly resource: ResourceType;
  readonly stats: InformerStats = { lists: 0, watches: 0, relistsAfterGone: 0, watchdogRestarts: 0, failures: 0 };
  private readonly client: KubeClient;
  private readonly opts: Required<Omit<InformerOptions, "namespace" | "labelSelector" | "fieldSelector" | "logger" | "metadataOnly">> &
    Pick<InformerOptions, "namespace" | "labelSelector" | "fieldSelector" | "metadataOnly">;
  private readonly log: InformerLogger;
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly stopper = new AbortController();
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private running: Promise<void> | undefined;
  private resourceVersion = "";

  constructor(client: KubeClient, resource: ResourceType, opts: InformerOptions = {}) {
    this.client = client;
    this.resource = resource;
    this.log = opts.logger ?? noopLogger;
    this.opts = {
      namespace: opts.namespace,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      metadataOnly: opts.metadataOnly,
      pageSize: opts.pageSize ?? 500,
      minWatchTimeoutSeconds: opts.minWatchTimeoutSeconds ?? 300,
      inactivityTimeoutMs: opts.inactivityTimeoutMs ?? 90_000,
      initialBackoffMs: opts.initialBackoffMs ?? 800,
      maxBackoffMs: opts.maxBackoffMs ?? 30_000,
    };
  }

  /** Handlers see every change; after a (re)list, differences are delivered as add/update/delete. */
  onEvent(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first LIST has been stored. */
  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    await this.running;
  }

  private get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  private emit(event: InformerEvent<T>): void {
    for (const handler of this.handlers) {
      try {
        handler(event);
      } catch (err) {
        this.log.warn("informer event handler failed", { err, kind: this.resource.kind });
      }
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        await this.watch();
        failures = 0;
      } catch (err) {
        if (this.stopped) break;
        if (isGone(err)) {
          // Our resourceVersion is older than the server keeps: start over from a fresh list.
          this.stats.relistsAfterGone++;
          this.log.info("watch resourceVersion expired; relisting", { kind: this.resource.kind, namespace: this.opts.namespace });
          needList = true;
          continue;
        }
        failures++;
        this.stats.failures++;
        const delay = this.backoff(failures);
        this.log.warn("list/watch failed; retrying", {
          kind: this.resource.kind,
          namespace: this.opts.namespace,
          error: messageOf(err),
          retryInMs: Math.round(delay),
        });
        await sleep(delay, undefined, { signal: this.stopper.signal }).catch(() => undefined);
      }
    }
  }

  /** Full jitter over an exponential envelope. */
  private backoff(failures: number): number {
    const envelope = Math.min(this.opts.maxBackoffMs, this.opts.initialBackoffMs * 2 ** Math.min(failures - 1, 20));
    return envelope / 2 + (Math.random() * envelope) / 2;
  }

  private async list(): Promise<void> {
    this.stats.lists++;
    const fresh = new Map<string, T>();
    let cont: string | undefined;
    let rv = "";
    do {
      const page = await this.client.list<T>(this.resource, {
        namespace: this.opts.namespace,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        limit: this.opts.pageSize,
        metadataOnly: this.opts.metadataOnly,
        continue: cont,
        signal: this.stopper.signal,
      });
      // A metadata-only list with no items carries `items: null`.
      for (const item of page.items ?? []) {
        // Items of a list carry no apiVersion/kind; fill them in for handlers and callers.
        item.apiVersion = this.resource.apiVersion;
        item.kind = this.resource.kind;
        fresh.set(objectKey(item), item);
      }
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion ?? rv;
    } while (cont);
    // Replace the store, delivering what changed while we were not watching.
    for (const key of this.store.keys()) {
      if (!fresh.has(key)) {
        const old = this.store.remove(key);
        if (old) this.emit({ type: "delete", obj: old });
      }
    }
    for (const obj of fresh.values()) this.apply(obj);
    this.resourceVersion = rv;
    if (!this.synced) {
      this.synced = true;
      for (const waiter of this.syncWaiters.splice(0)) waiter();
    }
  }

  private apply(obj: T): void {
    const old = this.store.get(objectKey(obj));
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    // Not kept: no reconciler reads managedFields (server-side apply computes them on the
    // server), and they are a third or more of a small object's JSON. An update sent without
    // them leaves the server's as they are.
    delete obj.metadata.managedFields;
    this.store.upsert(obj);
    this.emit(old ? { type: "update", obj, old } : { type: "add", obj });
  }

  /** One watch, until the server ends it (then resolves) or it fails (then throws). */
  private async watch(): Promise<void> {
    this.stats.watches++;
    const attempt = new AbortController();
    const signal = AbortSignal.any([this.stopper.signal, attempt.signal]);
    let silentTimer: NodeJS.Timeout | undefined;
    let silent = false;
    const resetWatchdog = () => {
      clearTimeout(silentTimer);
      silentTimer = setTimeout(() => {
        silent = true;
        attempt.abort();
      }, this.opts.inactivityTimeoutMs);
    };
    const timeoutSeconds = Math.floor(this.opts.minWatchTimeoutSeconds * (1 + Math.random()));
    resetWatchdog();
    try {
      const events = this.client.watch<T>(this.resource, {
        namespace: this.opts.namespace,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        metadataOnly: this.opts.metadataOnly,
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
        signal,
      });
      for await (const event of events) {
        resetWatchdog();
        if (event.type === "ERROR") {
          const status = event.object as unknown as { code?: number; message?: string; reason?: string };
          if (status.code === 410) {
            throw new ApiError(410, status.reason ?? "Expired", status.message ?? "resourceVersion expired");
          }
          throw new Error(`watch error event: ${status.message ?? JSON.stringify(status)}`);
        }
        const rv = event.object.metadata.resourceVersion;
        if (event.type === "BOOKMARK") {
          if (rv) this.resourceVersion = rv;
          continue;
        }
        event.object.apiVersion = this.resource.apiVersion;
        event.object.kind = this.resource.kind;
        if (event.type === "DELETED") {
          const old = this.store.remove(objectKey(event.object));
          this.emit({ type: "delete", obj: old ?? event.object });
        } else {
          this.apply(event.object);
        }
        if (rv) this.resourceVersion = rv;
      }
    } catch (err) {
      if (silent) {
        this.stats.watchdogRestarts++;
        // The watch's own connection is gone with it; the short requests' pooled connections shared
        // its path to the server and may be just as dead (a half-open link): replaced, and the
        // requests running on them fail now instead of at their timeout (their reconciles retry).
        this.client.renewConnections();
        this.log.info("watch was silent too long; restarting it", {
          kind: this.resource.kind,
          namespace: this.opts.namespace,
          silentForMs: this.opts.inactivityTimeoutMs,
        });
        return;
      }
      throw err;
    } finally {
      clearTimeout(silentTimer);
      attempt.abort();
    }
  }
}
