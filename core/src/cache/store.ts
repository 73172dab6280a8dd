// The in-memory store behind an informer: objects by key, plus indexers.
// Objects are deep-frozen on the way in, so what a reconciler gets from the
// cache cannot be mutated into a corrupt cache (structuredClone to edit).
import { deepFreeze, objectKey, type KubeObject } from "../client/index.ts";

/** Maps an object to the index values it should be found under (e.g. an owner's key). */
export type IndexFunc<T extends KubeObject> = (obj: T) => string[];

export class Store<T extends KubeObject = KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexers = new Map<string, IndexFunc<T>>();
  /** index name -> index value -> keys */
  private readonly indices = new Map<string, Map<string, Set<string>>>();

  addIndexer(name: string, fn: IndexFunc<T>): void {
    if (this.indexers.has(name)) return;
    this.indexers.set(name, fn);
    const index = new Map<string, Set<string>>();
    this.indices.set(name, index);
    for (const [key, obj] of this.items) this.indexInto(index, fn, key, obj);
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  get size(): number {
    return this.items.size;
  }

  byIndex(name: string, value: string): T[] {
    const keys = this.indices.get(name)?.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.items.get(k)).filter((o): o is T => o !== undefined);
  }

  /** Stores (a frozen) obj; returns the previous version. */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    if (old) this.unindex(key, old);
    deepFreeze(obj);
    this.items.set(key, obj);
    for (const [name, fn] of this.indexers) this.indexInto(this.indices.get(name)!, fn, key, obj);
    return old;
  }

  remove(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return old;
  }

  private indexInto(index: Map<string, Set<string>>, fn: IndexFunc<T>, key: string, obj: T): void {
    for (const value of fn(obj)) {
      let keys = index.get(value);
      if (!keys) index.set(value, (keys = new Set()));
      keys.add(key);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name)!;
      for (const value of fn(obj)) {
        const keys = index.get(value);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(value);
      }
    }
  }
}
