// The FIFO list of WorkQueue (work-queue.ts): the keys waiting, and the
// workers waiting for a key.

/**
 * A first-in first-out list whose `shift` is O(1) amortised: `Array#shift`
 * moves every remaining element, which adds up with 10,000 waiting keys.
 */
export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  shift(): T | undefined {
    if (this.#head === this.#items.length) return undefined;
    const item = this.#items[this.#head];
    // Drop the reference so a long-lived queue does not keep old keys alive.
    this.#items[this.#head] = undefined;
    this.#head++;
    if (this.#head === this.#items.length) {
      this.clear();
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      // Copying only once the dead prefix is as long as the live part keeps
      // the cost per shift constant on average.
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** The first `n` items, in order, without taking them. */
  peek(n: number): T[] {
    return this.#items.slice(this.#head, this.#head + Math.max(0, n)) as T[];
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}
