// The manager's cache: one informer per (kind, namespace, label selector),
// created on first use. With `namespaces: []` a kind gets one cluster-wide
// informer; otherwise one informer per watched namespace (per-namespace
// caches), so nothing outside those namespaces is ever listed or watched —
// which is also what lets the chart grant only namespaced Roles.
import type { KubeClient, KubeObject, ResourceType } from "../client/index.ts";
import { Informer, type InformerHandler, type InformerLogger, type InformerOptions } from "./informer.ts";
import type { IndexFunc } from "./store.ts";

export interface CacheOptions {
  /** Namespaces to watch; empty means cluster-wide. Defaults to []. */
  namespaces?: string[];
  /** Informer tuning shared by every informer (watchdog, backoff, page size). */
  informer?: Omit<InformerOptions, "namespace" | "labelSelector" | "logger">;
  logger?: InformerLogger;
}

export interface InformerScope {
  /** Server-side label selector for this kind, e.g. the manager's target. */
  labelSelector?: string;
  /**
   * Cache only metadata (name, labels, resourceVersion, ...): for Secrets, so
   * an operator notices that a referenced Secret changed without holding the
   * data of every Secret in memory; it reads the one it needs with a GET.
   */
  metadataOnly?: boolean;
}

interface KindEntry {
  resource: ResourceType;
  metadataOnly: boolean;
  informers: Informer[];
  handlers: InformerHandler<KubeObject>[];
  indexers: Map<string, IndexFunc<KubeObject>>;
}

export class Cache {
  private readonly client: KubeClient;
  private readonly namespaces: string[];
  private readonly informerOptions: CacheOptions["informer"];
  private readonly logger: InformerLogger | undefined;
  private readonly kinds = new Map<string, KindEntry>();
  private started = false;

  constructor(client: KubeClient, opts: CacheOptions = {}) {
    this.client = client;
    this.namespaces = opts.namespaces ?? [];
    this.informerOptions = opts.informer;
    this.logger = opts.logger;
  }

  private id(rt: ResourceType): string {
    return `${rt.apiVersion}/${rt.plural}`;
  }

  /** Registers a kind (idempotent); its informers start with the cache, or at once if it already runs. */
  register(rt: ResourceType, scope: InformerScope = {}): void {
    const id = this.id(rt);
    const existing = this.kinds.get(id);
    if (existing) {
      if (scope.metadataOnly !== undefined && existing.metadataOnly !== scope.metadataOnly) {
        throw new Error(`${rt.kind} is already cached ${existing.metadataOnly ? "as metadata only" : "in full"}; one manager caches a kind one way`);
      }
      return;
    }
    const namespaces = rt.namespaced && this.namespaces.length > 0 ? this.namespaces : [undefined];
    const entry: KindEntry = { resource: rt, metadataOnly: scope.metadataOnly ?? false, informers: [], handlers: [], indexers: new Map() };
    for (const namespace of namespaces) {
      const informer = new Informer(this.client, rt, {
        ...this.informerOptions,
        namespace,
        labelSelector: scope.labelSelector,
        metadataOnly: scope.metadataOnly,
        logger: this.logger,
      });
      informer.onEvent((event) => {
        for (const handler of entry.handlers) handler(event);
      });
      entry.informers.push(informer);
      if (this.started) informer.start();
    }
    this.kinds.set(id, entry);
  }

  private entry(rt: ResourceType): KindEntry {
    this.register(rt);
    return this.kinds.get(this.id(rt))!;
  }

  onEvent<T extends KubeObject>(rt: ResourceType, handler: InformerHandler<T>): void {
    this.entry(rt).handlers.push(handler as InformerHandler<KubeObject>);
  }

  addIndexer<T extends KubeObject>(rt: ResourceType, name: string, fn: IndexFunc<T>): void {
    const entry = this.entry(rt);
    entry.indexers.set(name, fn as IndexFunc<KubeObject>);
    for (const informer of entry.informers) informer.store.addIndexer(name, fn as IndexFunc<KubeObject>);
  }

  /** A cached object (deep-frozen: clone it before changing it). */
  get<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string): T | undefined {
    const key = namespace && rt.namespaced ? `${namespace}/${name}` : name;
    for (const informer of this.entry(rt).informers) {
      const obj = informer.store.get(key);
      if (obj) return obj as T;
    }
    return undefined;
  }

  list<T extends KubeObject>(rt: ResourceType, opts: { namespace?: string } = {}): T[] {
    const out: T[] = [];
    for (const informer of this.entry(rt).informers) {
      for (const obj of informer.store.list()) {
        if (!opts.namespace || obj.metadata.namespace === opts.namespace) out.push(obj as T);
      }
    }
    return out;
  }

  byIndex<T extends KubeObject>(rt: ResourceType, index: string, value: string): T[] {
    return this.entry(rt).informers.flatMap((i) => i.store.byIndex(index, value) as T[]);
  }

  informers(): Informer[] {
    return [...this.kinds.values()].flatMap((e) => e.informers);
  }

  start(): void {
    this.started = true;
    for (const informer of this.informers()) informer.start();
  }

  hasSynced(): boolean {
    return this.informers().every((i) => i.hasSynced());
  }

  async waitForSync(): Promise<void> {
    await Promise.all(this.informers().map((i) => i.waitForSync()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers().map((i) => i.stop()));
  }
}
