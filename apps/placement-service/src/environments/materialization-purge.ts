import {
  S3StorageDriver,
  s3ObjectOf,
  storageDriverFor,
  storageSchemeOf,
  type StorageDriver,
} from '@envengine/materialization-storage';
import { ApiError, type Logger } from '@envengine/service-kit';
import type { EngineObjectStore } from '../storage/engine-object-store.ts';
import type { EnvironmentRepository } from './environment.repository.ts';

/**
 * `?purge_data=true`: an environment's materialization files are removed through the
 * storage driver, as the tear-down lists them. A location is removed only if it lies under
 * the environment's own storage prefix (a recorded location is not trusted to: a remote
 * worker reported it), so a purge never reaches another environment's files or another
 * path of the engine host. `file://` files are removed here (the prefix is under the
 * engine's storage root), `s3://` ones in the engine's own store, under the tenant's key
 * prefix. Files in a store of the tenant's own (a binding with an endpoint) are the
 * tenant's to remove: the engine holds no lasting keys to it.
 */
export class MaterializationPurge {
  constructor(
    private readonly environments: EnvironmentRepository,
    private readonly engineStore: EngineObjectStore | undefined,
    private readonly log: Logger,
  ) {}

  async remove(tenantId: string, environmentId: string, locations: string[]): Promise<{ removed: number; skipped: number }> {
    const target = await this.environments.teardownOf(tenantId, environmentId);
    if (!target) {
      // A tear-down started again after the last one finished finds nothing left to purge.
      if (!(await this.environments.findById(tenantId, environmentId))) return { removed: 0, skipped: 0 };
      throw new ApiError('invalid_request', `Environment ${environmentId} is not being deleted.`);
    }
    if (!target.purgeData) throw new ApiError('invalid_request', `The delete of ${environmentId} did not ask for its data to be purged.`);
    const prefix = target.environment.storage_prefix;
    const driver = this.driverFor(tenantId, prefix);
    if (!driver) return { removed: 0, skipped: locations.length };
    let removed = 0;
    let skipped = 0;
    try {
      for (const location of locations) {
        if (!this.isUnder(prefix, location)) {
          skipped += 1;
          continue;
        }
        await driver.remove(location);
        removed += 1;
      }
    } finally {
      driver.close?.();
    }
    if (skipped > 0) this.log.warn({ tenant_id: tenantId, environment_id: environmentId, skipped }, 'purge skipped locations outside the storage prefix');
    return { removed, skipped };
  }

  private driverFor(tenantId: string, prefix: string): StorageDriver | undefined {
    const scheme = storageSchemeOf(prefix);
    if (scheme === 'file') return storageDriverFor(prefix);
    if (scheme === 's3' && this.engineStore && s3ObjectOf(prefix.replace(/\/*$/, '/x')).bucket === this.engineStore.bucket) {
      return new S3StorageDriver(prefix, this.engineStore.adminConnectionFor(tenantId));
    }
    return undefined;
  }

  /** Strictly under the prefix, with no `.`/`..` segment to climb out of it (the driver checks again). */
  private isUnder(prefix: string, location: string): boolean {
    const base = prefix.replace(/\/+$/, '');
    return location.startsWith(`${base}/`) && !location.slice(base.length).split('/').some((segment) => segment === '.' || segment === '..');
  }
}
