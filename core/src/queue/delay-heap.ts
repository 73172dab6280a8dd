// The delayed keys of WorkQueue (work-queue.ts), ordered by due time.

export interface DelayedKey {
  key: string;
  readyAt: number;
  /** Breaks ties between equal readyAt values in favour of the earlier request. */
  seq: number;
  /** Position in the heap, so that an earlier readyAt can be applied in place. */
  index: number;
}

/**
 * Binary min-heap of delayed keys by due time (client-go's waitForPriorityQueue).
 * One timer for the earliest key replaces a timer per key, and keys become
 * ready strictly in due-time order.
 */
export class DelayHeap {
  #items: DelayedKey[] = [];

  peek(): DelayedKey | undefined {
    return this.#items[0];
  }

  push(entry: DelayedKey): void {
    entry.index = this.#items.length;
    this.#items.push(entry);
    this.#up(entry.index);
  }

  pop(): DelayedKey | undefined {
    const top = this.#items[0];
    const last = this.#items.pop();
    if (top === undefined || last === undefined) return undefined;
    if (last !== top) {
      last.index = 0;
      this.#items[0] = last;
      this.#down(0);
    }
    return top;
  }

  /** Restores heap order after the entry's readyAt was made earlier. */
  movedEarlier(entry: DelayedKey): void {
    this.#up(entry.index);
  }

  clear(): void {
    this.#items = [];
  }

  #before(a: DelayedKey, b: DelayedKey): boolean {
    return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);
  }

  #swap(i: number, j: number, a: DelayedKey, b: DelayedKey): void {
    this.#items[i] = b;
    b.index = i;
    this.#items[j] = a;
    a.index = j;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const child = this.#items[i];
      const above = this.#items[parent];
      if (child === undefined || above === undefined || !this.#before(child, above)) return;
      this.#swap(i, parent, child, above);
      i = parent;
    }
  }

  #down(i: number): void {
    for (;;) {
      const node = this.#items[i];
      if (node === undefined) return;
      let smallest = i;
      let smallestEntry = node;
      for (const c of [2 * i + 1, 2 * i + 2]) {
        const child = this.#items[c];
        if (child !== undefined && this.#before(child, smallestEntry)) {
          smallest = c;
          smallestEntry = child;
        }
      }
      if (smallest === i) return;
      this.#swap(i, smallest, node, smallestEntry);
      i = smallest;
    }
  }
}
