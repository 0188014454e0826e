/**
 * A binary min-heap of (expiresAt, key) so the memory store reclaims expired entries in
 * O(log n) each, without scanning the whole map on every request.
 */
export class ExpiryQueue {
  private readonly times: number[] = [];
  private readonly keys: string[] = [];

  get size(): number {
    return this.times.length;
  }

  push(expiresAt: number, key: string): void {
    this.times.push(expiresAt);
    this.keys.push(key);
    let i = this.times.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.times[parent]! <= this.times[i]!) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** Pops and hands every key whose time is <= now to `expire`, earliest first. */
  drain(now: number, expire: (key: string, expiresAt: number) => void): void {
    while (this.times.length > 0 && this.times[0]! <= now) {
      const time = this.times[0]!;
      const key = this.keys[0]!;
      const lastTime = this.times.pop()!;
      const lastKey = this.keys.pop()!;
      if (this.times.length > 0) {
        this.times[0] = lastTime;
        this.keys[0] = lastKey;
        this.siftDown(0);
      }
      expire(key, time);
    }
  }

  private siftDown(i: number): void {
    const n = this.times.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < n && this.times[left]! < this.times[smallest]!) smallest = left;
      if (right < n && this.times[right]! < this.times[smallest]!) smallest = right;
      if (smallest === i) return;
      this.swap(i, smallest);
      i = smallest;
    }
  }

  private swap(a: number, b: number): void {
    const t = this.times[a]!;
    this.times[a] = this.times[b]!;
    this.times[b] = t;
    const k = this.keys[a]!;
    this.keys[a] = this.keys[b]!;
    this.keys[b] = k;
  }
}
