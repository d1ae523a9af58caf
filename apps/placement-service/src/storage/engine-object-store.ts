import { createHmac, randomBytes } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256, type S3Connection } from '@envengine/materialization-storage';
import { ApiError } from '@envengine/service-kit';

/** Where the engine's own S3-compatible store is, and its administrator (held here only). */
export interface EngineObjectStoreSettings {
  /** How this service reaches it. */
  endpoint: string;
  /** How this service reaches its IAM API (ENGINE_S3_IAM_URL): never where tenants' keys reach, since SeaweedFS's lets a user mint keys for itself. */
  iamEndpoint: string;
  /** How workers reach it (PUBLIC_S3_URL); the same as `endpoint` on one host. */
  publicEndpoint: string;
  region: string;
  /** The one bucket tenants get keys to (their objects under `<tenant id>/` in it). */
  bucket: string;
  admin: { accessKeyId: string; secretAccessKey: string };
}

/** Whose objects a set of keys reaches, and how. */
export interface StoreScope {
  tenantId: string;
  environmentId: string;
  /** The storage prefix's path in the bucket (`prod` of `s3://lake/prod`), without slashes at its ends; '' for the bucket's root. */
  objectPath: string;
  mode: 'live' | 'read_only';
}

/** One IAM user per environment and mode; environment ids are unique across tenants. */
const userOf = (scope: Pick<StoreScope, 'environmentId' | 'mode'>) => `env-${scope.environmentId}-${scope.mode === 'read_only' ? 'ro' : 'rw'}`;
const REPROVISION_AFTER_MS = 10 * 60_000;
/** The one inline policy of each environment user. */
const POLICY_NAME = 'envengine-environment';
/** A user with no policy whose short-lived keys show when the S3 endpoint has heard of the IAM changes before them (`untilInEffect`). */
const BARRIER_USER = 'envengine-barrier';
/** How long the S3 endpoint may take to hear of IAM changes before they count as failed. */
const IN_EFFECT_TIMEOUT_MS = 15_000;

/**
 * Who a set of keys is handed to: a pool credential (its id), whose workers get keys of
 * their own so that revoking it takes exactly those away, or the engine's own runner (null).
 */
export type KeyHolder = string | null;

/** One environment's keys to the engine's store: they reach objects under `<bucket>/<tenant id>/<its prefix>/` and nothing else. */
export interface TenantStoreKeys {
  accessKeyId: string;
  secretAccessKey: string;
  /** Put before every object key. */
  keyPrefix: string;
}

/**
 * The engine's own store, for `s3://` prefixes whose binding names no endpoint. Each
 * environment gets IAM users of its own in the store (made through its IAM API, which
 * SeaweedFS serves apart from the S3 endpoint that keys reach), one per binding mode,
 * whose only policy allows reading (and, for `live`, writing) objects under
 * `<tenant id>/<its prefix>/` of the engine's bucket; so a tenant, its workers and
 * its code never hold the administrator's keys, and no key reads or lists another
 * environment's objects. Each holder (a pool credential's workers, the engine's runner) has
 * keys of its own on the user, derived from the administrator's secret (HMAC), so nothing
 * is stored, every replica of this service issues the same ones, and a revoked credential's
 * keys can be taken away alone; the user, a holder's key and the policy are made
 * idempotently when first needed in this process, and again after ten minutes.
 */
export class EngineObjectStore {
  private readonly signer: SignatureV4;
  private readonly provisioned = new Map<string, { at: number; done: Promise<void> }>();

  constructor(private readonly settings: EngineObjectStoreSettings) {
    this.signer = new SignatureV4({ credentials: settings.admin, region: settings.region, service: 'iam', sha256: NodeSha256 });
  }

  get publicEndpoint(): string {
    return this.settings.publicEndpoint;
  }

  get region(): string {
    return this.settings.region;
  }

  /** A connection with the administrator's keys under the tenant's key prefix: only for the engine's own removals (an environment's purge). */
  adminConnectionFor(tenantId: string): S3Connection {
    return {
      endpoint: this.settings.endpoint,
      region: this.settings.region,
      forcePathStyle: true,
      accessKeyId: this.settings.admin.accessKeyId,
      secretAccessKey: this.settings.admin.secretAccessKey,
      keyPrefix: `${tenantId}/`,
    };
  }

  /** The one bucket of the engine's store that tenants get keys to. */
  get bucket(): string {
    return this.settings.bucket;
  }

  /**
   * Keys for one environment's objects (`<bucket>/<tenant id>/<its prefix>/…`), read and
   * write for a `live` binding, read only for a `read_only` one; their user is made in the
   * store first if this process has not made it in the last ten minutes (the store may
   * have lost its IAM state since).
   */
  async keysFor(scope: StoreScope, holder: KeyHolder): Promise<TenantStoreKeys> {
    const user = userOf(scope);
    const keys = this.derivedKeys(scope, holder);
    const made = `${user} ${keys.accessKeyId}`;
    const provisioned = this.provisioned.get(made);
    if (!provisioned || provisioned.at < Date.now() - REPROVISION_AFTER_MS) {
      const provisioning = { at: Date.now(), done: this.provision(user, scope, keys) };
      this.provisioned.set(made, provisioning);
      // A store that was down is asked again next time.
      provisioning.done.catch(() => this.provisioned.delete(made));
      await provisioning.done;
    } else {
      await provisioned.done;
    }
    return keys;
  }

  /**
   * Takes away every key of these environments' users but the live holders' (the engine's
   * runner is always one): a revoked credential's keys, and any other key the user has.
   * Answers once the S3 endpoint refuses them. Idempotent; answers how many keys went.
   */
  async retireKeysExcept(tenantId: string, environmentIds: readonly string[], liveHolders: readonly KeyHolder[]): Promise<number> {
    let retired = 0;
    for (const environmentId of environmentIds) {
      for (const mode of ['live', 'read_only'] as const) {
        const scope = { tenantId, environmentId, mode, objectPath: '' };
        const user = userOf(scope);
        const kept = new Set(liveHolders.map((holder) => this.derivedKeys(scope, holder).accessKeyId));
        const listed = await this.iam({ Action: 'ListAccessKeys', UserName: user }, ['NoSuchEntity']);
        for (const [, accessKeyId] of listed.matchAll(/<AccessKeyId>([^<]+)<\/AccessKeyId>/g)) {
          if (kept.has(accessKeyId!)) continue;
          await this.iam({ Action: 'DeleteAccessKey', UserName: user, AccessKeyId: accessKeyId! }, ['NoSuchEntity']);
          this.provisioned.delete(`${user} ${accessKeyId}`);
          retired += 1;
        }
      }
    }
    if (retired > 0) await this.untilInEffect();
    return retired;
  }

  /**
   * An environment's tear-down: its users are deleted, and with them every access key they
   * have; answers once the S3 endpoint refuses them. Idempotent.
   */
  async retireEnvironmentUsers(environmentId: string): Promise<void> {
    for (const mode of ['live', 'read_only'] as const) {
      const user = userOf({ environmentId, mode });
      for (const made of this.provisioned.keys()) if (made.startsWith(`${user} `)) this.provisioned.delete(made);
      // As in AWS, a user goes only once it has no keys and no policy left.
      const listed = await this.iam({ Action: 'ListAccessKeys', UserName: user }, ['NoSuchEntity']);
      for (const [, accessKeyId] of listed.matchAll(/<AccessKeyId>([^<]+)<\/AccessKeyId>/g)) {
        await this.iam({ Action: 'DeleteAccessKey', UserName: user, AccessKeyId: accessKeyId! }, ['NoSuchEntity']);
      }
      await this.iam({ Action: 'DeleteUserPolicy', UserName: user, PolicyName: POLICY_NAME }, ['NoSuchEntity']);
      await this.iam({ Action: 'DeleteUser', UserName: user }, ['NoSuchEntity']);
    }
    await this.untilInEffect();
  }

  /** The holder's keys, derived: every replica hands out the same ones. The runner's keep the subject they always had. */
  private derivedKeys(scope: Pick<StoreScope, 'tenantId' | 'environmentId' | 'mode'>, holder: KeyHolder): TenantStoreKeys {
    const subject = `${scope.tenantId}:${scope.environmentId}:${scope.mode}${holder === null ? '' : `:${holder}`}`;
    const derive = (purpose: string) => createHmac('sha256', this.settings.admin.secretAccessKey).update(`${purpose}:${subject}`).digest('hex');
    return {
      accessKeyId: `EE${derive('access-key-id').slice(0, 30).toUpperCase()}`,
      secretAccessKey: derive('secret-access-key'),
      keyPrefix: `${scope.tenantId}/`,
    };
  }

  private async provision(user: string, scope: StoreScope, keys: TenantStoreKeys): Promise<void> {
    await this.iam({ Action: 'CreateUser', UserName: user }, ['EntityAlreadyExists']);
    await this.iam({ Action: 'CreateAccessKey', UserName: user, AccessKeyId: keys.accessKeyId, SecretAccessKey: keys.secretAccessKey }, ['EntityAlreadyExists']);
    // One named bucket and the environment's own path: a wildcard bucket (`*/<tenant>/*`)
    // would also match `<bucket>/<another tenant>/<tenant>/…`, since `*` spans slashes in
    // the store's matching.
    const objects = `arn:aws:s3:::${this.settings.bucket}/${keys.keyPrefix}${scope.objectPath ? `${scope.objectPath}/` : ''}*`;
    // A multipart upload's create, parts and completion are PutObject (as in AWS); listing an
    // upload's parts is not needed (lib-storage never asks), and SeaweedFS 4.48 refuses the name.
    const actions = scope.mode === 'read_only' ? ['s3:GetObject'] : ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload'];
    const policy = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: actions, Resource: [objects] }] };
    await this.iam({ Action: 'PutUserPolicy', UserName: user, PolicyName: POLICY_NAME, PolicyDocument: JSON.stringify(policy) }, []);
    await this.untilInEffect();
  }

  /**
   * Waits until the S3 endpoint serves what the IAM API was told before this call: keys
   * handed out work at once, and keys taken away are refused once the revoke answers.
   * SeaweedFS's IAM gateway writes to the filer, and the S3 gateway reloads every user from
   * the filer on each change it hears of; so once it knows a key made after those changes,
   * it knows them too. That key (random, on a user with no policy) is made, probed until
   * the endpoint knows it, and deleted.
   */
  private async untilInEffect(): Promise<void> {
    const probe = { accessKeyId: `EEB${randomBytes(14).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(20).toString('hex') };
    await this.iam({ Action: 'CreateUser', UserName: BARRIER_USER }, ['EntityAlreadyExists']);
    await this.iam({ Action: 'CreateAccessKey', UserName: BARRIER_USER, AccessKeyId: probe.accessKeyId, SecretAccessKey: probe.secretAccessKey }, []);
    try {
      const signer = new SignatureV4({ credentials: probe, region: this.settings.region, service: 's3', sha256: NodeSha256 });
      const url = new URL(`/${this.settings.bucket}/${BARRIER_USER}`, this.settings.endpoint);
      const deadline = Date.now() + IN_EFFECT_TIMEOUT_MS;
      for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
        const text = await (await signedFetch(signer, url, 'GET', { 'x-amz-content-sha256': EMPTY_SHA256 })).text();
        // Known (AccessDenied: the user has no policy): every change before it is in effect.
        if (!/<Code>InvalidAccessKeyId<\/Code>/.test(text)) return;
        if (Date.now() > deadline) throw storeUnavailable(`its S3 endpoint had not heard of the changes after ${IN_EFFECT_TIMEOUT_MS / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    } finally {
      await this.iam({ Action: 'DeleteAccessKey', UserName: BARRIER_USER, AccessKeyId: probe.accessKeyId }, ['NoSuchEntity']).catch(() => undefined);
    }
  }

  /** One IAM call, signed by the administrator; its answer's text (empty for an error code in `tolerated`, which counts as done). */
  private async iam(params: Record<string, string>, tolerated: string[]): Promise<string> {
    const body = new URLSearchParams({ ...params, Version: '2010-05-08' }).toString();
    const answer = await signedFetch(this.signer, new URL('/', this.settings.iamEndpoint), 'POST', { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, body);
    const text = await answer.text();
    if (answer.ok) return text;
    const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `HTTP ${answer.status}`;
    if (tolerated.includes(code)) return '';
    throw storeUnavailable(`${params['Action']} was refused (${code})`);
  }

}

/** SHA-256 of an empty body, which S3 wants named on a signed GET. */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** A request signed (SigV4) with these keys; a store that does not answer is `unavailable`. */
async function signedFetch(signer: SignatureV4, url: URL, method: 'GET' | 'POST', headers: Record<string, string>, body?: string): Promise<Response> {
  const signed = await signer.sign({
    method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    path: url.pathname,
    query: {},
    headers: { host: url.host, ...headers },
    ...(body === undefined ? {} : { body }),
  });
  try {
    return await fetch(url, { method, headers: signed.headers, body, signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw storeUnavailable(`${url.origin} did not answer (${(error as Error).message})`);
  }
}

function storeUnavailable(why: string): ApiError {
  return new ApiError('unavailable', `The engine's object store could not issue this tenant's keys: ${why}.`);
}
