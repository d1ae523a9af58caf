import { s3StoragePrefixProblem } from './s3-storage-driver.ts';
import { fileStorageDirectoryOf, fileStoragePrefixProblem } from './file-storage-driver.ts';
import { prefixBase, storageSchemeOf } from './storage-locations.ts';

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

/**
 * A storage prefix as a comparable key ending in `/`: the scheme lower-cased, a `file://`
 * prefix as the directory it names (`localhost`, percent-encodings and trailing slashes
 * resolved: `file:///lake/prod/`), an `s3://` one as its bucket and path
 * (`s3://lake/prod/`). Two prefixes overlap exactly when one key starts with the other.
 */
export function storagePrefixKey(storagePrefix: string): string {
  const scheme = storageSchemeOf(storagePrefix);
  if (scheme === 'file') {
    const directory = fileStorageDirectoryOf(storagePrefix);
    if (directory !== null) return `file://${directory}`;
  }
  const base = prefixBase(storagePrefix);
  const rest = scheme === null ? base : base.slice(scheme.length);
  return `${scheme ?? ''}${rest}/`;
}

/** Whether two storage prefixes are equal, or one lies inside the other (their files could mix). */
export function storagePrefixesOverlap(first: string, second: string): boolean {
  const [a, b] = [storagePrefixKey(first), storagePrefixKey(second)];
  return a.startsWith(b) || b.startsWith(a);
}

/**
 * The key (`storagePrefixKey`) of the prefix that a file the engine wrote belongs to:
 * materializations are stored at `<prefix>/<asset key>/<file>`, so the location without
 * its last two segments. A purge removes a location only if this is its own prefix's key
 * and no other live environment's.
 */
export function writtenLocationPrefixKey(location: string): string {
  return storagePrefixKey(location.split('/').slice(0, -2).join('/'));
}
