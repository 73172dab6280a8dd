// A bound on concurrent backups and restores per manager: each holds
// connections to a server, a compressor per table and S3 uploads in flight.
export class OperationSlots {
  readonly limit: number;
  private readonly held = new Set<string>();

  /** @param limit operations at once. */
  constructor(limit: number) {
    this.limit = limit;
  }

  tryAcquire(key: string): boolean {
    if (this.held.has(key)) return true;
    if (this.held.size >= this.limit) return false;
    this.held.add(key);
    return true;
  }

  release(key: string): void {
    this.held.delete(key);
  }

  get inUse(): number {
    return this.held.size;
  }
}
