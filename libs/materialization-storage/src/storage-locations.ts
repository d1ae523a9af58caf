import { StorageLocationError } from './storage-driver.ts';

/** The URL scheme of a storage prefix or location, lower-case, or null when it has none. */
export function storageSchemeOf(url: string): string | null {
  return /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1]?.toLowerCase() ?? null;
}

/** A name that stays one path segment of a location: an asset key, a materialization id. */
export const LOCATION_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The prefix without its trailing slashes (those of `scheme://` kept). */
export function prefixBase(storagePrefix: string): string {
  let base = storagePrefix;
  while (base.endsWith('/') && !base.endsWith('://')) base = base.slice(0, -1);
  return base;
}

/**
 * Whether `location` names something strictly under `storagePrefix`, by its text: no
 * `.`/`..` segment (also percent-encoded), backslash, query or fragment can take it out.
 */
export function isUnderStoragePrefix(storagePrefix: string, location: string): boolean {
  const base = prefixBase(storagePrefix);
  if (!location.startsWith(`${base}/`)) return false;
  const rest = location.slice(base.length + 1);
  if (/[\\?#\0]/.test(rest)) return false;
  return rest.split('/').every((segment) => {
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      return false;
    }
    return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\\');
  });
}

/**
 * Where a materialization is stored: `<storage prefix>/<asset key>/<materialization id>.parquet`,
 * the prefix's trailing slashes dropped. The key and id must be plain names (letters,
 * digits, `.`, `_`, `-`, no `..`), so that they stay one path segment each.
 */
export function materializationLocation(storagePrefix: string, assetKey: string, materializationId: string): string {
  for (const [label, value] of [['Asset key', assetKey], ['Materialization id', materializationId]] as const) {
    if (!LOCATION_SEGMENT.test(value) || value.includes('..')) {
      throw new StorageLocationError(`${label} ${JSON.stringify(value)} cannot be a path segment (letters, digits, ".", "_", "-"; no "..").`);
    }
  }
  return `${prefixBase(storagePrefix)}/${assetKey}/${materializationId}.parquet`;
}
