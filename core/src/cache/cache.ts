// The manager's cache: one informer per (kind, namespace), built once every
// kind's scope is declared (scopes.ts). With `namespaces: []` a kind gets one
// cluster-wide informer; otherwise one informer per watched namespace
// (per-namespace caches), so nothing outside those namespaces is ever listed
// or watched — which is also what lets the chart grant only namespaced Roles.
//
// Declarations are collected first and build() turns them into informers, so
// the order operators and controllers declare in does not matter, indexers can
// be declared up front, and a conflict fails before anything is listed. A kind
// nobody declared (a handler, an indexer or a read of it) is cached whole.
import type { KubeClient, KubeObject, ResourceType } from "../client/index.ts";
import { Informer, type InformerHandler, type InformerLogger, type InformerOptions } from "./informer.ts";
import { describeDeclarer, kindId, resolveScopes, type CacheScope, type CollectedDeclaration, type Declarer, type ResolvedScope } from "./scopes.ts";
import type { IndexFunc } from "./store.ts";

export interface CacheOptions {
  /** Namespaces to watch; empty means cluster-wide. Defaults to []. */
  namespaces?: string[];
  /** The manager's target as a label selector (`stateward.io/target=x`), for scopes declared with `target`. Defaults to none. */
  targetSelector?: string;
  /** Informer tuning shared by every informer (watchdog, backoff, page size). */
  informer?: Omit<InformerOptions, "namespace" | "labelSelector" | "logger">;
  logger?: InformerLogger;
}

interface KindEntry {
  scope: ResolvedScope;
  informers: Informer[];
}

export class Cache {
  private readonly client: KubeClient;
  private readonly namespaces: string[];
  private readonly targetSelector: string | undefined;
  private readonly informerOptions: CacheOptions["informer"];
  private readonly logger: InformerLogger | undefined;
  private readonly declarations: CollectedDeclaration[] = [];
  /** Handlers and indexers by kind id, kept apart from the informers so that they can come before build(). */
  private readonly handlers = new Map<string, InformerHandler<KubeObject>[]>();
  private readonly indexers = new Map<string, Map<string, IndexFunc<KubeObject>>>();
  private readonly undeclared = new Map<string, ResourceType>();
  /** Set by build(). */
  private kinds: Map<string, KindEntry> | undefined;
  private started = false;

  constructor(client: KubeClient, opts: CacheOptions = {}) {
    this.client = client;
    this.namespaces = opts.namespaces ?? [];
    this.targetSelector = opts.targetSelector;
    this.informerOptions = opts.informer;
    this.logger = opts.logger;
  }

  /**
   * Declares how a kind is cached; the same declaration again merges, a different one makes build() fail.
   * @throws Error once the cache is built: declarations are made while operators are set up
   */
  declare(rt: ResourceType, scope: CacheScope = {}, by: Declarer = {}): void {
    this.collect({ kind: rt, scope, by });
  }

  /** A controller owns or watches a kind without declaring its scope (see CollectedDeclaration). */
  use(rt: ResourceType, by: Declarer): void {
    this.collect({ kind: rt, scope: undefined, by });
  }

  private collect(d: CollectedDeclaration): void {
    if (this.kinds) throw new Error(`${d.kind.kind}: ${describeDeclarer(d.by)} declares how it is cached after the cache was built; declare it in the operator module or while setting up controllers`);
    this.declarations.push(d);
  }

  /**
   * Merges the declarations and creates the informers (started by start()). Idempotent.
   * @throws Error when a kind is declared two different ways, naming both declarers
   */
  build(): void {
    if (this.kinds) return;
    const scopes = resolveScopes(this.declarations, this.targetSelector);
    this.kinds = new Map();
    for (const [id, scope] of scopes) this.kinds.set(id, this.createInformers(scope));
    for (const [id, rt] of this.undeclared) if (!this.kinds.has(id)) this.kinds.set(id, this.createInformers(whole(rt)));
  }

  /** A kind's informers — one per watched namespace — as its scope says. */
  private createInformers(scope: ResolvedScope): KindEntry {
    const rt = scope.resource;
    const id = kindId(rt);
    const namespaces = rt.namespaced && this.namespaces.length > 0 ? this.namespaces : [undefined];
    const indexers = new Map([...scope.indexers, ...(this.indexers.get(id) ?? [])]);
    const informers = namespaces.map((namespace) => {
      const informer = new Informer(this.client, rt, {
        ...this.informerOptions,
        namespace,
        labelSelector: scope.labelSelector,
        metadataOnly: scope.metadataOnly,
        logger: this.logger,
      });
      informer.onEvent((event) => {
        for (const handler of this.handlers.get(id) ?? []) handler(event);
      });
      for (const [name, fn] of indexers) informer.store.addIndexer(name, fn);
      if (this.started) informer.start();
      return informer;
    });
    return { scope, informers };
  }

  /** How a kind is cached (undefined when it is not): for tests and diagnostics. */
  scopeOf(rt: ResourceType): { labelSelector?: string; metadataOnly: boolean; by: string } | undefined {
    const s = this.kinds?.get(kindId(rt))?.scope;
    return s ? { ...(s.labelSelector !== undefined ? { labelSelector: s.labelSelector } : {}), metadataOnly: s.metadataOnly, by: s.by } : undefined;
  }

  /** The kind's informers; a kind nobody declared is cached whole from its first use. None before build(). */
  private entry(rt: ResourceType): KindEntry | undefined {
    const id = kindId(rt);
    if (!this.kinds) {
      this.undeclared.set(id, rt);
      return undefined;
    }
    let entry = this.kinds.get(id);
    if (!entry) {
      entry = this.createInformers(whole(rt));
      this.kinds.set(id, entry);
    }
    return entry;
  }

  onEvent<T extends KubeObject>(rt: ResourceType, handler: InformerHandler<T>): void {
    const id = kindId(rt);
    this.handlers.set(id, [...(this.handlers.get(id) ?? []), handler as InformerHandler<KubeObject>]);
    this.entry(rt);
  }

  /** Adds an indexer to a kind, at any time (declaring it in the kind's CacheScope says the same up front). */
  addIndexer<T extends KubeObject>(rt: ResourceType, name: string, fn: IndexFunc<T>): void {
    const id = kindId(rt);
    this.indexers.set(id, new Map([...(this.indexers.get(id) ?? []), [name, fn as IndexFunc<KubeObject>]]));
    for (const informer of this.entry(rt)?.informers ?? []) informer.store.addIndexer(name, fn as IndexFunc<KubeObject>);
  }

  /** A cached object (deep-frozen: clone it before changing it). */
  get<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string): T | undefined {
    const key = namespace && rt.namespaced ? `${namespace}/${name}` : name;
    for (const informer of this.entry(rt)?.informers ?? []) {
      const obj = informer.store.get(key);
      if (obj) return obj as T;
    }
    return undefined;
  }

  list<T extends KubeObject>(rt: ResourceType, opts: { namespace?: string } = {}): T[] {
    const out: T[] = [];
    for (const informer of this.entry(rt)?.informers ?? []) {
      for (const obj of informer.store.list()) {
        if (!opts.namespace || obj.metadata.namespace === opts.namespace) out.push(obj as T);
      }
    }
    return out;
  }

  byIndex<T extends KubeObject>(rt: ResourceType, index: string, value: string): T[] {
    return (this.entry(rt)?.informers ?? []).flatMap((i) => i.store.byIndex(index, value) as T[]);
  }

  informers(): Informer[] {
    return [...(this.kinds?.values() ?? [])].flatMap((e) => e.informers);
  }

  /** Builds the informers if build() was not called, and starts them. */
  start(): void {
    this.build();
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

const whole = (rt: ResourceType): ResolvedScope => ({ resource: rt, labelSelector: undefined, metadataOnly: false, indexers: new Map(), by: "a use of a kind nobody declared" });
