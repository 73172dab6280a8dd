// The manager's cache: one informer per (kind, namespace, label selector),
// created on first use. With `namespaces: []` a kind gets one cluster-wide
// informer; otherwise one informer per watched namespace (per-namespace
// caches), so nothing outside those namespaces is ever listed or watched —
// which is also what lets the chart grant only namespaced Roles.
//
// A kind is cached one way per manager: one label selector, full or metadata
// only. The selector is declared by whoever registers the kind (a controller's
// for(), owns() or watches(), or a module); two different declarations are an
// error at start-up naming both callers — never "whoever came first decides"
// and the other silently seeing more, or fewer, objects than it asked for. A
// registration that declares nothing (and a read of a kind nobody registered)
// takes the kind as it is cached; if it came first, a later declaration made
// before the cache starts still applies.
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
  /** Who registers it, for the error when two callers want a kind cached differently (e.g. "controller mysqlcluster: owns"). */
  by?: string;
}

interface KindEntry {
  resource: ResourceType;
  metadataOnly: boolean;
  /** The declared label selector; undefined: nobody declared one (everything in scope). */
  labelSelector: string | undefined;
  selectorDeclared: boolean;
  metadataDeclared: boolean;
  /** Who declared how the kind is cached (or first touched it). */
  by: string;
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

  /**
   * Registers a kind (idempotent); its informers start with the cache, or at once if it already runs.
   * @throws Error when the kind is registered already with another label selector or the other way
   *   (full or metadata only), naming both callers
   */
  register(rt: ResourceType, scope: InformerScope = {}): void {
    const id = this.id(rt);
    const by = scope.by ?? "an unnamed caller";
    const existing = this.kinds.get(id);
    if (!existing) {
      const entry: KindEntry = {
        resource: rt,
        metadataOnly: scope.metadataOnly ?? false,
        labelSelector: scope.labelSelector,
        selectorDeclared: scope.labelSelector !== undefined,
        metadataDeclared: scope.metadataOnly !== undefined,
        by,
        informers: [],
        handlers: [],
        indexers: new Map(),
      };
      this.kinds.set(id, entry);
      this.createInformers(entry);
      return;
    }
    const conflict = (what: string, theirs: string, mine: string) =>
      new Error(`${rt.kind} is cached ${theirs} for ${existing.by}, and ${by} asks for it ${mine}: ${what}; one manager caches a kind one way (declare the same selector for both, or none for one of them)`);
    const way = (metadataOnly: boolean) => (metadataOnly ? "as metadata only" : "in full");
    if (scope.metadataOnly !== undefined && existing.metadataOnly !== scope.metadataOnly) {
      if (existing.metadataDeclared || this.started) throw conflict("full objects or metadata", way(existing.metadataOnly), way(scope.metadataOnly));
      existing.metadataOnly = scope.metadataOnly;
      existing.metadataDeclared = true;
      this.createInformers(existing);
    }
    if (scope.labelSelector !== undefined && existing.labelSelector !== scope.labelSelector) {
      const theirs = existing.labelSelector === undefined ? "without a label selector" : `with label selector "${existing.labelSelector}"`;
      if (existing.selectorDeclared || this.started) throw conflict("two label selectors", theirs, `with label selector "${scope.labelSelector}"`);
      // Touched first by a caller that did not say, before anything was listed: the declaration applies.
      existing.labelSelector = scope.labelSelector;
      existing.selectorDeclared = true;
      existing.by = by;
      this.createInformers(existing);
    }
  }

  /** (Re)creates a kind's informers — one per watched namespace — as the entry says; only before the cache starts, or for a new kind. */
  private createInformers(entry: KindEntry): void {
    const rt = entry.resource;
    const namespaces = rt.namespaced && this.namespaces.length > 0 ? this.namespaces : [undefined];
    entry.informers = namespaces.map((namespace) => {
      const informer = new Informer(this.client, rt, {
        ...this.informerOptions,
        namespace,
        labelSelector: entry.labelSelector,
        metadataOnly: entry.metadataOnly,
        logger: this.logger,
      });
      informer.onEvent((event) => {
        for (const handler of entry.handlers) handler(event);
      });
      for (const [name, fn] of entry.indexers) informer.store.addIndexer(name, fn);
      if (this.started) informer.start();
      return informer;
    });
  }

  /** How a kind is cached (undefined when it is not): for tests and diagnostics. */
  scopeOf(rt: ResourceType): { labelSelector?: string; metadataOnly: boolean; by: string } | undefined {
    const e = this.kinds.get(this.id(rt));
    return e ? { ...(e.labelSelector !== undefined ? { labelSelector: e.labelSelector } : {}), metadataOnly: e.metadataOnly, by: e.by } : undefined;
  }

  private entry(rt: ResourceType): KindEntry {
    if (!this.kinds.has(this.id(rt))) this.register(rt, { by: "a read of the cache before any registration" });
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
