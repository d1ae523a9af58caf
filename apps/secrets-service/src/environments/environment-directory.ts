import type { PlacementClient } from '@envengine/service-clients';
import { notFound, TtlCache } from '@envengine/service-kit';

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
  private readonly cache: TtlCache<EnvironmentRef | null>;

  constructor(
    private readonly placement: PlacementClient,
    options: { ttlMs: number; maxEntries: number },
  ) {
    this.cache = new TtlCache(options);
  }

  /** The environment, or 404 when the caller has none of that name. */
  async require(tenantId: string, name: string, requestId?: string): Promise<EnvironmentRef> {
    const ref = await this.cache.get(`${tenantId}/${name}`, async () => {
      const environment = await this.placement.findEnvironment(tenantId, name, requestId);
      return environment ? { id: environment.id, name: environment.name } : null;
    });
    if (!ref) throw notFound(`Environment "${name}"`);
    return ref;
  }
}
