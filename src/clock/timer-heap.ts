/** A binary min-heap of timers ordered by due time, then by arming order (stable). */
export interface HeapTimer {
  due: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
  /** The heap it was pushed on: only that heap cancels it. */
  heap?: TimerHeap;
}

const before = (a: HeapTimer, b: HeapTimer): boolean => a.due < b.due || (a.due === b.due && a.seq < b.seq);

export class TimerHeap {
  readonly #items: HeapTimer[] = [];
  #live = 0;

  get size(): number {
    return this.#live;
  }

  push(timer: HeapTimer): void {
    timer.heap = this;
    const items = this.#items;
    items.push(timer);
    this.#live += 1;
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  /** Cancels `timer`; a no-op for one that fired, was cancelled, or is not this heap's (or not a timer). */
  cancel(timer: HeapTimer): void {
    if (typeof timer !== 'object' || timer === null || timer.heap !== this || timer.cancelled) return;
    timer.cancelled = true;
    this.#live -= 1;
  }

  /** The earliest live timer, without removing it. */
  peek(): HeapTimer | undefined {
    this.#dropCancelled();
    return this.#items[0];
  }

  /** Removes and returns the earliest live timer. */
  pop(): HeapTimer | undefined {
    this.#dropCancelled();
    const top = this.#items[0];
    if (top === undefined) return undefined;
    this.#removeTop();
    top.cancelled = true;
    this.#live -= 1;
    return top;
  }

  #dropCancelled(): void {
    while (this.#items.length > 0 && this.#items[0]!.cancelled) this.#removeTop();
  }

  #removeTop(): void {
    const items = this.#items;
    const last = items.pop()!;
    if (items.length === 0) return;
    items[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < items.length && before(items[l]!, items[m]!)) m = l;
      if (r < items.length && before(items[r]!, items[m]!)) m = r;
      if (m === i) return;
      [items[i], items[m]] = [items[m]!, items[i]!];
      i = m;
    }
  }
}
