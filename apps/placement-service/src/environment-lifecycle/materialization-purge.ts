import type { PurgeFilesResult } from '@envengine/contracts';
import {
  isUnderStoragePrefix,
  S3StorageDriver,
  storageDriverFor,
  storagePrefixKey,
  storageSchemeOf,
  writtenLocationPrefixKey,
  type StorageDriver,
} from '@envengine/materialization-storage';
import { ApiError, type Logger } from '@envengine/service-kit';
import type { EngineObjectStore } from '../storage/engine-object-store.ts';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';

/** Files listed and removed per call of a purge's step. */
const PURGE_PAGE = 500;

/**
 * `?purge_data=true`: an environment's materialization files are removed through the
 * storage driver, as the tear-down lists them. A location is removed only if it lies under
 * the environment's own storage prefix (a recorded location is not trusted to: a remote
 * worker reported it), so a purge never reaches another environment's files or another
 * path of the engine host. `file://` files are removed here (the prefix is under the
 * engine's storage root), `s3://` ones in the engine's own store, under the tenant's key
 * prefix. Files in a store of the tenant's own (a binding with an endpoint) are the
 * tenant's to remove: the engine holds no lasting keys to it. Nothing is removed that
 * lies under another live environment's prefix (docs/design.md#materializations-and-storage).
 */
export class MaterializationPurge {
  constructor(
    private readonly environments: EnvironmentRepository,
    private readonly engineStore: EngineObjectStore | undefined,
    private readonly log: Logger,
  ) {}

  /**
   * Removes the next page of the files the engine wrote under the environment's prefix
   * (`StorageDriver.listWritten`), records or not: an earlier environment of the same
   * prefix, deleted without a purge, left files no record names any more.
   */
  async removePage(tenantId: string, environmentId: string, after: string | null): Promise<PurgeFilesResult> {
    const target = await this.environments.teardownOf(tenantId, environmentId);
    if (!target) {
      // A tear-down started again after the last one finished finds nothing left to purge.
      if (!(await this.environments.findById(tenantId, environmentId))) return { removed: 0, next: null };
      throw new ApiError('invalid_request', `Environment ${environmentId} is not being deleted.`);
    }
    if (!target.purgeData) throw new ApiError('invalid_request', `The delete of ${environmentId} did not ask for its data to be purged.`);
    const prefix = target.environment.storage_prefix;
    const driver = this.driverFor(tenantId, prefix);
    if (!driver) {
      this.log.warn({ tenant_id: tenantId, environment_id: environmentId }, "purge left the files in the tenant's own object store: the engine holds no keys to it");
      return { removed: 0, next: null };
    }
    if (after !== null && !isUnderStoragePrefix(prefix, after)) throw new ApiError('invalid_request', `${after} is not under the storage prefix ${prefix}.`);
    try {
      // Another live environment of the same prefix (made before overlaps were refused) may
      // own any of these files: none is removed, and they stay for its own purge.
      if ((await this.environments.sharingPrefix(tenantId, environmentId, prefix)) > 0) {
        this.log.warn({ tenant_id: tenantId, environment_id: environmentId }, 'purge left the files: another live environment has the same storage prefix');
        return { removed: 0, next: null };
      }
      const page = await driver.listWritten(after, PURGE_PAGE);
      // Only `<its prefix>/<asset key>/<file>`: a file of an environment nested inside this
      // one's prefix is further down, and is that one's. The driver refuses a location outside
      // its prefix again before it removes anything.
      const own = storagePrefixKey(prefix);
      const removable = page.locations.filter((location) => writtenLocationPrefixKey(location) === own);
      for (const location of removable) await driver.remove(location);
      return { removed: removable.length, next: page.next };
    } finally {
      driver.close?.();
    }
  }

  private driverFor(tenantId: string, prefix: string): StorageDriver | undefined {
    const scheme = storageSchemeOf(prefix);
    if (scheme === 'file') return storageDriverFor(prefix);
    // By the prefix's text: a bucket name the driver refuses (`s3://0/p`) was never written to, and is not the engine's.
    if (scheme === 's3' && this.engineStore && /^s3:\/\/([^/]+)/i.exec(prefix)?.[1] === this.engineStore.bucket) {
      return new S3StorageDriver(prefix, this.engineStore.adminConnectionFor(tenantId));
    }
    return undefined;
  }
}
