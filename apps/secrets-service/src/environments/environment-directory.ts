import type { PlacementClient } from '@envengine/service-clients';
import { environmentDeleting, notFound } from '@envengine/service-kit';

export interface EnvironmentRef {
  id: string;
  name: string;
  /** A preview's parent, whose bindings and secrets fill in what the preview does not set (absent: none). */
  parent?: { id: string; name: string } | null;
}

/**
 * Finds the caller's environment by name through the placement-service, which owns
 * environments. Asked every time, not cached: a name is re-created with a new id after a
 * delete, and a cached id would file secrets under the environment that was deleted.
 */
export class EnvironmentDirectory {
  constructor(private readonly placement: PlacementClient) {}

  /** The environment, or 404 when the caller has none of that name. */
  async require(tenantId: string, name: string, requestId?: string): Promise<EnvironmentRef> {
    const environment = await this.placement.findEnvironment(tenantId, name, requestId);
    if (!environment) throw notFound(`Environment "${name}"`);
    // A live preview's parent cannot be deleted (409 environment_has_previews): found by its name.
    const parent = environment.parent === null ? null : await this.placement.findEnvironment(tenantId, environment.parent, requestId);
    return { id: environment.id, name: environment.name, parent: parent ? { id: parent.id, name: parent.name } : null };
  }

  /** The environment for a change: 409 `environment_deleting` once its tear-down has begun. */
  async requireWritable(tenantId: string, name: string, requestId?: string): Promise<EnvironmentRef> {
    const environment = await this.placement.findEnvironment(tenantId, name, requestId);
    if (!environment) throw notFound(`Environment "${name}"`);
    if (environment.status === 'deleting') throw environmentDeleting(name);
    const parent = environment.parent === null ? null : await this.placement.findEnvironment(tenantId, environment.parent, requestId);
    return { id: environment.id, name: environment.name, parent: parent ? { id: parent.id, name: parent.name } : null };
  }
}
