import { FileStorageDriver } from './file-storage-driver.ts';
import { S3StorageDriver, type S3Connection } from './s3-storage-driver.ts';
import { StorageLocationError, UnsupportedStorageError, type StorageDriver } from './storage-driver.ts';
import { storageSchemeOf } from './storage-locations.ts';

/**
 * The driver for a storage prefix, chosen by its URL scheme: `file://` needs nothing more;
 * `s3://` needs the connection of the asset's binding.
 */
export function storageDriverFor(storagePrefix: string, s3?: S3Connection): StorageDriver {
  const scheme = storageSchemeOf(storagePrefix);
  if (scheme === 'file') return new FileStorageDriver(storagePrefix);
  if (scheme === 's3') {
    if (!s3) throw new StorageLocationError(`${storagePrefix} is in object storage; its binding's connection (endpoint and keys) is needed to reach it.`);
    return new S3StorageDriver(storagePrefix, s3);
  }
  throw new UnsupportedStorageError(storagePrefix, scheme);
}
