import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { ApiError } from '@envengine/service-kit';

/** Where the engine's own S3-compatible store is, and its administrator (held here only). */
export interface EngineObjectStoreSettings {
  /** How this service reaches it. */
  endpoint: string;
  /** How workers reach it (PUBLIC_S3_URL); the same as `endpoint` on one host. */
  publicEndpoint: string;
  region: string;
  /** The one bucket tenants get keys to (their objects under `<tenant id>/` in it). */
  bucket: string;
  admin: { accessKeyId: string; secretAccessKey: string };
}

/** One tenant's keys to the engine's store: they reach objects under `<bucket>/<tenant id>/` and nothing else. */
export interface TenantStoreKeys {
  accessKeyId: string;
  secretAccessKey: string;
  /** Put before every object key. */
  keyPrefix: string;
}

/** What `SignatureV4` hashes with: SHA-256, or HMAC-SHA-256 when given a key (node:crypto, no extra package). */
class NodeSha256 {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    if (this.secret === undefined) return createHash('sha256');
    const key = typeof this.secret === 'string' ? this.secret : ArrayBuffer.isView(this.secret) ? new Uint8Array(this.secret.buffer, this.secret.byteOffset, this.secret.byteLength) : new Uint8Array(this.secret);
    return createHmac('sha256', key);
  }
  update(data: Uint8Array): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

/**
 * The engine's own store, for `s3://` prefixes whose binding names no endpoint. Each tenant
 * gets an IAM user of its own in the store (SeaweedFS's embedded IAM API), whose only
 * policy allows reading and writing objects under `<tenant id>/` of the engine's bucket; so a
 * tenant, its workers and its code never hold the administrator's keys, and one tenant's
 * keys cannot read or list another's objects. The keys are derived from the
 * administrator's secret (HMAC), so nothing is stored and every replica of this service
 * issues the same ones; the user, its keys and its policy are made idempotently the first
 * time a tenant needs them in this process.
 */
export class EngineObjectStore {
  private readonly signer: SignatureV4;
  private readonly provisioned = new Map<string, Promise<void>>();

  constructor(private readonly settings: EngineObjectStoreSettings) {
    this.signer = new SignatureV4({ credentials: settings.admin, region: settings.region, service: 'iam', sha256: NodeSha256 });
  }

  get publicEndpoint(): string {
    return this.settings.publicEndpoint;
  }

  get region(): string {
    return this.settings.region;
  }

  /** The tenant's keys, its user made in the store first if this process has not yet. */
  async keysFor(tenantId: string): Promise<TenantStoreKeys> {
    const keys = this.derivedKeys(tenantId);
    let made = this.provisioned.get(tenantId);
    if (!made) {
      made = this.provision(tenantId, keys);
      this.provisioned.set(tenantId, made);
      // A store that was down is asked again next time.
      made.catch(() => this.provisioned.delete(tenantId));
    }
    await made;
    return keys;
  }

  derivedKeys(tenantId: string): TenantStoreKeys {
    const derive = (purpose: string) => createHmac('sha256', this.settings.admin.secretAccessKey).update(`${purpose}:${tenantId}`).digest('hex');
    return {
      accessKeyId: `EE${derive('access-key-id').slice(0, 30).toUpperCase()}`,
      secretAccessKey: derive('secret-access-key'),
      keyPrefix: `${tenantId}/`,
    };
  }

  private async provision(tenantId: string, keys: TenantStoreKeys): Promise<void> {
    const userName = `tenant-${tenantId}`;
    await this.iam({ Action: 'CreateUser', UserName: userName }, ['EntityAlreadyExists']);
    await this.iam({ Action: 'CreateAccessKey', UserName: userName, AccessKeyId: keys.accessKeyId, SecretAccessKey: keys.secretAccessKey }, ['EntityAlreadyExists']);
    // One named bucket: a wildcard bucket (`*/<tenant>/*`) would also match
    // `<bucket>/<another tenant>/<tenant>/…`, since `*` spans slashes in the store's matching.
    const objects = `arn:aws:s3:::${this.settings.bucket}/${keys.keyPrefix}*`;
    const policy = {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], Resource: [objects] }],
    };
    await this.iam({ Action: 'PutUserPolicy', UserName: userName, PolicyName: 'envengine-tenant', PolicyDocument: JSON.stringify(policy) }, []);
  }

  /** One IAM call, signed by the administrator; an error code in `tolerated` counts as done. */
  private async iam(params: Record<string, string>, tolerated: string[]): Promise<void> {
    const url = new URL(this.settings.endpoint);
    const body = new URLSearchParams({ ...params, Version: '2010-05-08' }).toString();
    const signed = await this.signer.sign({
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: '/',
      query: {},
      headers: { host: url.host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body,
    });
    let answer: Response;
    try {
      answer = await fetch(new URL('/', url), { method: 'POST', headers: signed.headers, body, signal: AbortSignal.timeout(10_000) });
    } catch (error) {
      throw storeUnavailable(`it did not answer (${(error as Error).message})`);
    }
    if (answer.ok) return;
    const text = await answer.text();
    const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `HTTP ${answer.status}`;
    if (tolerated.includes(code)) return;
    throw storeUnavailable(`${params['Action']} was refused (${code})`);
  }
}

function storeUnavailable(why: string): ApiError {
  return new ApiError('unavailable', `The engine's object store could not issue this tenant's keys: ${why}.`);
}
