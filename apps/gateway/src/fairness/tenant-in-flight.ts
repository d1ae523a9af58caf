/** A request waiting for one of its tenant's slots. */
interface Waiter {
  grant(release: () => void): void;
  timer: NodeJS.Timeout;
}

/**
 * The requests each tenant has in flight to the services, against a cap per tenant: one
 * tenant can never hold every upstream connection (the cap is a share of the pool), so
 * another tenant's request always finds one. A request over its tenant's share waits, in
 * arrival order, behind that tenant's own requests only, for at most a bound; then it is
 * refused. Counted per gateway process.
 */
export class TenantInFlight {
  private readonly counts = new Map<string, number>();
  /** Per tenant, its waiting requests in arrival order (a Set keeps insertion order): each wait and release is constant time, however many wait. */
  private readonly waiting = new Map<string, Set<Waiter>>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error('TenantInFlight needs a limit of at least 1');
  }

  /** A slot for one request of `tenantId`, with its release (idempotent); undefined when the tenant holds `limit` already. */
  take(tenantId: string): (() => void) | undefined {
    const held = this.counts.get(tenantId) ?? 0;
    if (held >= this.limit) return undefined;
    this.counts.set(tenantId, held + 1);
    return this.releaseOf(tenantId);
  }

  /**
   * A slot for one request of `tenantId`, waiting up to `waitMs` behind the tenant's
   * earlier requests for one to come free; undefined if none did (0: no wait).
   */
  acquire(tenantId: string, waitMs: number): Promise<(() => void) | undefined> {
    const queue = this.waiting.get(tenantId);
    const now = queue === undefined ? this.take(tenantId) : undefined;
    if (now || waitMs <= 0) return Promise.resolve(now);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: (release) => {
          clearTimeout(waiter.timer);
          resolve(release);
        },
        timer: setTimeout(() => {
          this.leaveQueue(tenantId, waiter);
          resolve(undefined);
        }, waitMs),
      };
      if (queue) queue.add(waiter);
      else this.waiting.set(tenantId, new Set([waiter]));
    });
  }

  /** The requests `tenantId` has in flight now. */
  heldBy(tenantId: string): number {
    return this.counts.get(tenantId) ?? 0;
  }

  /** Tenants with a request in flight or waiting (the maps never keep a tenant with none). */
  get tenants(): number {
    return new Set([...this.counts.keys(), ...this.waiting.keys()]).size;
  }

  private releaseOf(tenantId: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.get(tenantId)?.values().next().value;
      if (next) {
        // The slot passes to the tenant's next waiting request: its count stays.
        this.leaveQueue(tenantId, next);
        next.grant(this.releaseOf(tenantId));
        return;
      }
      const now = (this.counts.get(tenantId) ?? 1) - 1;
      if (now <= 0) this.counts.delete(tenantId);
      else this.counts.set(tenantId, now);
    };
  }

  private leaveQueue(tenantId: string, waiter: Waiter): void {
    const queue = this.waiting.get(tenantId);
    queue?.delete(waiter);
    if (queue?.size === 0) this.waiting.delete(tenantId);
  }
}
