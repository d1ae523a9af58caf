import type { PlacementClient } from '@envengine/service-clients';
import { notFound } from '@envengine/service-kit';

export interface EnvironmentRef {
  id: string;
  name: string;
}

/**
 * Finds the caller's environment by name through the placement-service, which owns
 * environments. A name keeps its id for the environment's life, so found ones are kept
 * for a while; a missing one is asked again every time (it may be created any moment).
 */
export class EnvironmentDirectory {
  private readonly cache = new Map<string, { ref: EnvironmentRef; expiresAt: number }>();

  constructor(
    private readonly placement: PlacementClient,
    private readonly options: { ttlMs: number; maxEntries: number },
  ) {}

  /** The environment, or 404 when the caller has none of that name. */
  async require(tenantId: string, name: string, requestId?: string): Promise<EnvironmentRef> {
    const key = `${tenantId}/${name}`;
    const now = Date.now();
    const cached = this.cache.get(key);
    if (cached && cached.expiresAt > now) return cached.ref;
    const environment = await this.placement.findEnvironment(tenantId, name, requestId);
    if (!environment) {
      this.cache.delete(key);
      throw notFound(`Environment "${name}"`);
    }
    const ref = { id: environment.id, name: environment.name };
    if (this.cache.size >= this.options.maxEntries) {
      // Maps iterate in insertion order: the first key is the oldest entry.
      this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, { ref, expiresAt: now + this.options.ttlMs });
    return ref;
  }
}
