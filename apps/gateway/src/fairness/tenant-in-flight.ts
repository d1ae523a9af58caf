/**
 * The requests each tenant has in flight to the services, against a cap per tenant: one
 * tenant can never hold every upstream connection (the cap is a share of the pool), so
 * another tenant's request always finds one. Counted per gateway process.
 */
export class TenantInFlight {
  private readonly counts = new Map<string, number>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error('TenantInFlight needs a limit of at least 1');
  }

  /** A slot for one request of `tenantId`, with its release (idempotent); undefined when the tenant holds `limit` already. */
  take(tenantId: string): (() => void) | undefined {
    const held = this.counts.get(tenantId) ?? 0;
    if (held >= this.limit) return undefined;
    this.counts.set(tenantId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.counts.get(tenantId) ?? 1) - 1;
      if (now <= 0) this.counts.delete(tenantId);
      else this.counts.set(tenantId, now);
    };
  }

  /** The requests `tenantId` has in flight now. */
  heldBy(tenantId: string): number {
    return this.counts.get(tenantId) ?? 0;
  }

  /** Tenants with a request in flight (the map never keeps a tenant at zero). */
  get tenants(): number {
    return this.counts.size;
  }
}
