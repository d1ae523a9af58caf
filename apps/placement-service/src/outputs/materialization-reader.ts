import type { Readable } from 'node:stream';
import type { Environment, Materialization, MaterializationPreview } from '@envengine/contracts';
import {
  isUnderStoragePrefix,
  ParquetFileError,
  readParquetHead,
  S3StorageDriver,
  s3ObjectOf,
  storageDriverFor,
  storageSchemeOf,
  StoredFileNotFoundError,
  type ByteRange,
  type StorageDriver,
} from '@envengine/materialization-storage';
import type { DeploymentClient, SecretsClient } from '@envengine/service-clients';
import { ApiError, notFound } from '@envengine/service-kit';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { RunQueries } from '../runs/run-queries.ts';
import type { EngineObjectStore } from '../storage/engine-object-store.ts';

/** The most of a file a preview reads (footer and row groups): 64 MiB. */
export const PREVIEW_MAX_READ_BYTES = 64 * 1024 * 1024;

/** One materialization's stored file, opened for reading. */
export interface OpenedMaterialization {
  materialization: Materialization;
  /** Its size in bytes, as the store reports it now. */
  size: number;
  /** Its bytes (`range` only, when given). */
  stream(range?: ByteRange): Promise<Readable>;
  /** Lets go of the store's connections once every stream is done. */
  close(): void;
}

export interface MaterializationAddress {
  environmentName: string;
  assetKey: string;
  materializationId: string;
}

/**
 * `…/materializations/:id/data` and `/preview`: a tenant reads its outputs through the API,
 * whatever the driver. The record comes from the deployment scope; the file is read here,
 * where the engine's storage is reachable: `file://` prefixes under the engine's storage
 * root, and the engine's own object store under the tenant's key prefix. A location is
 * read only when it lies under the environment's own storage prefix (a recorded location
 * is not trusted: a remote worker reported it). A store of the tenant's own (its binding
 * names an endpoint) is not read: the engine holds no lasting keys to it, and fetching a
 * tenant-chosen endpoint from the control plane would let a tenant aim the engine at its
 * internal network.
 */
export class MaterializationReader {
  constructor(
    private readonly environments: EnvironmentRepository,
    private readonly runs: Pick<RunQueries, 'findRun'>,
    private readonly deployments: DeploymentClient,
    private readonly secrets: SecretsClient,
    private readonly engineStore: EngineObjectStore | undefined,
  ) {}

  async open(tenantId: string, address: MaterializationAddress, requestId?: string): Promise<OpenedMaterialization> {
    const environment = await this.environments.findByName(tenantId, address.environmentName);
    if (!environment) throw notFound(`Environment "${address.environmentName}"`);
    const materialization = await this.deployments.materializationOfAsset(tenantId, environment.id, address.assetKey, address.materializationId, requestId);
    const missing = () => notFound(`Materialization "${address.materializationId}" of asset "${address.assetKey}"`);
    if (!materialization) throw missing();
    const location = materialization.location;
    if (location === null || !isUnderStoragePrefix(environment.storage_prefix, location)) throw missing();
    const driver = await this.driverFor(tenantId, environment, materialization, requestId);
    try {
      const size = await driver.size(location);
      return {
        materialization,
        size,
        stream: (range) => driver.readStream(location, range),
        close: () => driver.close?.(),
      };
    } catch (error) {
      driver.close?.();
      if (error instanceof StoredFileNotFoundError) {
        throw notFound(`The file of materialization "${materialization.id}" (it was removed from ${environment.storage_prefix})`);
      }
      throw error;
    }
  }

  /**
   * The first `limit` rows, reading only the footer and the row groups that hold them, and
   * at most PREVIEW_MAX_READ_BYTES: a remote worker may have stored any bytes (a footer that
   * claims gigabytes, one huge row group), and this service serves every tenant. A file
   * that is not Parquet, or that would take more, is 422.
   */
  async preview(tenantId: string, address: MaterializationAddress, limit: number, requestId?: string): Promise<MaterializationPreview> {
    const opened = await this.open(tenantId, address, requestId);
    try {
      const head = await readParquetHead(
        {
          byteLength: opened.size,
          slice: async (start, end = opened.size) => {
            if (end <= start) return new ArrayBuffer(0);
            const chunks: Buffer[] = [];
            for await (const chunk of await opened.stream({ start, end: end - 1 })) chunks.push(chunk as Buffer);
            const bytes = Buffer.concat(chunks);
            return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
          },
        },
        limit,
        PREVIEW_MAX_READ_BYTES,
      ).catch((error: unknown) => {
        if (!(error instanceof ParquetFileError)) throw error;
        throw new ApiError('invalid_request', `Materialization "${opened.materialization.id}" cannot be previewed: ${error.message}`, {
          details: [{ path: 'id', message: 'its file cannot be previewed; download it with …/data' }],
        });
      });
      return {
        materialization_id: opened.materialization.id,
        columns: head.columns,
        row_count: head.row_count,
        rows: head.rows.map(jsonSafeRow),
        truncated: head.row_count > head.rows.length,
      };
    } finally {
      opened.close();
    }
  }

  private async driverFor(tenantId: string, environment: Environment, materialization: Materialization, requestId?: string): Promise<StorageDriver> {
    const prefix = environment.storage_prefix;
    const scheme = storageSchemeOf(prefix);
    if (scheme === 'file') return storageDriverFor(prefix);
    const unreachable = (why: string) =>
      new ApiError('materialization_unreachable', `Materialization "${materialization.id}" is at ${materialization.location}, ${why}; read it there with your own keys.`);
    if (scheme !== 's3') throw unreachable(`under a storage prefix this engine has no driver for`);
    const store = this.engineStore;
    if (!store || s3ObjectOf(`${prefix.replace(/\/+$/, '')}/x`).bucket !== store.bucket) {
      throw unreachable(`in an object store that is not the engine's own`);
    }
    const binding = await this.bindingEndpointOf(tenantId, environment, materialization, requestId);
    if (binding !== null) throw unreachable(`in the store that binding "${binding}" names (its endpoint), which the engine holds no keys to`);
    // The engine's own store: under the tenant's key prefix, and (checked above) the environment's prefix.
    return new S3StorageDriver(prefix, store.adminConnectionFor(tenantId));
  }

  /** The binding the asset wrote through when it names an endpoint of the tenant's own store; else null. */
  private async bindingEndpointOf(tenantId: string, environment: Environment, materialization: Materialization, requestId?: string): Promise<string | null> {
    if (materialization.run_id === null) return null;
    const run = await this.runs.findRun(tenantId, materialization.run_id);
    const bindingName = run?.assets.find((asset) => asset.key === materialization.asset_key)?.binding;
    if (bindingName === undefined || bindingName === null) return null;
    const bindings = await this.secrets.listBindings(tenantId, environment.name, requestId);
    const binding = bindings.find((candidate) => candidate.name === bindingName);
    const endpoint = binding?.config['endpoint'] ?? (binding?.secret_refs['endpoint'] === undefined ? undefined : 'secret');
    return endpoint === undefined || endpoint === null || endpoint === '' ? null : bindingName;
  }
}

/** JSON carries no bigint: an integer past 2^53 is given as its decimal string. */
function jsonSafeRow(row: Record<string, unknown>): Record<string, unknown> {
  const safe: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) safe[name] = typeof value === 'bigint' ? value.toString() : value;
  return safe;
}
