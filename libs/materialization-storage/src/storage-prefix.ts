import { s3StoragePrefixProblem } from './s3-storage-driver.ts';
import { fileStoragePrefixProblem } from './file-storage-driver.ts';
import { storageSchemeOf } from './storage-locations.ts';

/**
 * Why an environment may not be created with this storage prefix, or null. Checked at
 * create, so that a prefix no driver can use (no scheme, `gs://`) is refused there and not
 * at the first emit: a `file://` prefix must lie under the engine's storage root
 * (`rootPath`, absolute), an `s3://` one name a bucket and a path.
 */
export function storagePrefixProblem(storagePrefix: string, rootPath: string): string | null {
  const scheme = storageSchemeOf(storagePrefix);
  if (scheme === 'file') return fileStoragePrefixProblem(storagePrefix, rootPath);
  if (scheme === 's3') return s3StoragePrefixProblem(storagePrefix);
  const found = scheme === null ? 'has no scheme' : `has the scheme ${scheme}://, which has no driver`;
  return `A storage prefix is s3://<bucket>/<path> or file://<path under the engine's storage root>; ${storagePrefix} ${found}.`;
}
