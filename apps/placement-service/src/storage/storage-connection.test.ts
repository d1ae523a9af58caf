import { describe, expect, it } from 'vitest';
import { ApiError } from '@envengine/service-kit';
import { s3StorageConnection, type EngineStoreAccess } from './storage-connection.ts';

const keys = { access_key_id: 'AKIAEXAMPLE', secret_access_key: 'wJalrXUtnFEMI' };
const engineStore: EngineStoreAccess = {
  endpoint: 'http://store.internal:8333',
  region: 'us-east-1',
  bucket: 'lake',
  keys: async () => ({ accessKeyId: 'EETENANT', secretAccessKey: 'issued-secret', keyPrefix: 'ten_1/' }),
};

async function refusal(config: Record<string, unknown>, store: EngineStoreAccess | null = engineStore): Promise<ApiError> {
  const error = await s3StorageConnection('lake', config, store ?? undefined, 'lake').then(() => undefined, (caught: unknown) => caught);
  if (!(error instanceof ApiError)) throw new Error(`expected a refusal, got ${String(error)}`);
  return error;
}

describe('s3StorageConnection', () => {
  it("uses the binding's endpoint and keys, with defaults for region and path style", async () => {
    expect(await s3StorageConnection('lake', { endpoint: 'https://minio.example.com:9000/', ...keys }, engineStore, 'data')).toEqual({
      kind: 's3',
      endpoint: 'https://minio.example.com:9000',
      region: 'us-east-1',
      force_path_style: true,
      access_key_id: 'AKIAEXAMPLE',
      secret_access_key: 'wJalrXUtnFEMI',
      key_prefix: '',
      binding: 'lake',
    });
    const aws = await s3StorageConnection('lake', { endpoint: 'https://s3.eu-west-1.amazonaws.com', region: 'eu-west-1', force_path_style: false, ...keys }, undefined, 'data');
    expect(aws).toMatchObject({ region: 'eu-west-1', force_path_style: false });
  });

  it("uses the engine's store, with the tenant's issued keys, when the binding names no endpoint", async () => {
    expect(await s3StorageConnection('lake', { region: '' }, engineStore, 'lake')).toEqual({
      kind: 's3',
      endpoint: 'http://store.internal:8333',
      region: 'us-east-1',
      force_path_style: true,
      access_key_id: 'EETENANT',
      secret_access_key: 'issued-secret',
      key_prefix: 'ten_1/',
      binding: null,
    });
  });

  it.each([
    [{ endpoint: 'https://s3.example.com', secret_access_key: 'x' }, 'config.access_key_id', /names an endpoint but no access_key_id/],
    [{ endpoint: 'https://s3.example.com', access_key_id: 'x' }, 'config.secret_access_key', /names an endpoint but no secret_access_key/],
    [{ ...keys }, 'config.endpoint', /names access keys but no endpoint/],
    [{ endpoint: 'not a url', ...keys }, 'config.endpoint', /endpoint is not a URL/],
    [{ endpoint: 'ftp://s3.example.com', ...keys }, 'config.endpoint', /must be an http:\/\/ or https:\/\/ URL/],
    [{ endpoint: 'https://user:pw@s3.example.com', ...keys }, 'config.endpoint', /must carry no credential/],
    [{ endpoint: 'https://s3.example.com', force_path_style: 'yes', ...keys }, 'config.force_path_style', /force_path_style must be true or false/],
    [{ endpoint: 42, ...keys }, 'config.endpoint', /endpoint must be a string/],
  ])('refuses %j with a 422 naming %s', async (config, path, message) => {
    const error = await refusal(config);
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/^Storage binding "lake": /);
    expect(error.message).toMatch(message);
    expect(error.details.map((detail) => detail.path)).toEqual([path]);
    // Never a key in the message.
    expect(error.message).not.toContain(keys.secret_access_key);
  });

  it("refuses another bucket than the engine store's when the binding names no endpoint", async () => {
    const error = await s3StorageConnection('lake', {}, engineStore, 'other').catch((caught: unknown) => caught as ApiError);
    expect((error as ApiError).message).toMatch(/whose one bucket is "lake" \(not "other"\)/);
  });

  it('says when there is no endpoint and the engine has no store of its own', async () => {
    expect((await refusal({}, null)).message).toMatch(/names no endpoint, and this engine has no object store of its own \(ENGINE_S3_URL\)/);
  });
});
