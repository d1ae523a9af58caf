import type { StorageConnection } from '@envengine/contracts';
import { ApiError } from '@envengine/service-kit';

/** The settings of an `s3://` storage binding, as its resolved config holds them (secrets included). */
export const S3_BINDING_SETTINGS = ['endpoint', 'region', 'force_path_style', 'access_key_id', 'secret_access_key'] as const;

/** The engine's own store, when it has one: the endpoint workers use, its bucket, and the environment's issued keys. */
export interface EngineStoreAccess {
  endpoint: string;
  region: string;
  bucket: string;
  keys(): Promise<{ accessKeyId: string; secretAccessKey: string; keyPrefix: string }>;
}

function refused(binding: string, message: string, setting: string): ApiError {
  return new ApiError('invalid_request', `Storage binding "${binding}": ${message}`, { details: [{ path: `config.${setting}`, message }] });
}

/**
 * How a worker reaches an `s3://` prefix through one binding (its resolved config):
 * - `endpoint` given: the tenant's own store, with `access_key_id` and `secret_access_key`
 *   (from `secret_refs`), `region` (default `us-east-1`) and `force_path_style` (default
 *   true: most self-hosted stores need it; AWS S3 takes both);
 * - no `endpoint`: the engine's own store, with keys the engine issued to this tenant;
 *   keys in the binding are then refused rather than silently ignored.
 * Every problem is a 422 naming the binding and the setting.
 */
export async function s3StorageConnection(
  binding: string,
  config: Record<string, unknown>,
  engineStore: EngineStoreAccess | undefined,
  /** The bucket the storage prefix names. */
  bucket: string,
): Promise<StorageConnection> {
  const text = (setting: string): string | undefined => {
    const value = config[setting];
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string') throw refused(binding, `${setting} must be a string`, setting);
    return value;
  };
  const endpoint = text('endpoint');
  const region = text('region');
  const accessKeyId = text('access_key_id');
  const secretAccessKey = text('secret_access_key');
  const pathStyle = config['force_path_style'];
  if (pathStyle !== undefined && typeof pathStyle !== 'boolean') throw refused(binding, 'force_path_style must be true or false', 'force_path_style');

  if (endpoint === undefined) {
    if (accessKeyId !== undefined || secretAccessKey !== undefined) {
      throw refused(binding, 'names access keys but no endpoint; give the endpoint of the store they belong to, or drop the keys to use the engine\'s own store', 'endpoint');
    }
    if (!engineStore) {
      throw refused(binding, 'names no endpoint, and this engine has no object store of its own (ENGINE_S3_URL); set config.endpoint and the access_key_id and secret_access_key secret refs', 'endpoint');
    }
    if (bucket !== engineStore.bucket) {
      throw refused(binding, `names no endpoint, so it is the engine's store, whose one bucket is "${engineStore.bucket}" (not "${bucket}"); use s3://${engineStore.bucket}/<prefix>, or set config.endpoint to a store that has "${bucket}"`, 'endpoint');
    }
    const keys = await engineStore.keys();
    return {
      kind: 's3',
      endpoint: engineStore.endpoint,
      region: engineStore.region,
      force_path_style: true,
      access_key_id: keys.accessKeyId,
      secret_access_key: keys.secretAccessKey,
      key_prefix: keys.keyPrefix,
      binding: null,
    };
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    // The value is not repeated: it may come from a secret.
    throw refused(binding, 'endpoint is not a URL (for example https://s3.eu-west-1.amazonaws.com)', 'endpoint');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refused(binding, 'endpoint must be an http:// or https:// URL', 'endpoint');
  if (url.username || url.password) throw refused(binding, 'endpoint must carry no credential; give the keys as secret_refs', 'endpoint');
  for (const [setting, value] of [['access_key_id', accessKeyId], ['secret_access_key', secretAccessKey]] as const) {
    if (value === undefined) throw refused(binding, `names an endpoint but no ${setting}; add it to secret_refs`, setting);
  }
  return {
    kind: 's3',
    endpoint: url.toString().replace(/\/$/, ''),
    region: region ?? 'us-east-1',
    force_path_style: pathStyle ?? true,
    access_key_id: accessKeyId!,
    secret_access_key: secretAccessKey!,
    key_prefix: '',
    binding,
  };
}
