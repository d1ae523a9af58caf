import type { EventCause } from '@envengine/event-log';
import type { RedisConnection } from '@envengine/redis-connections';
import { generatePoolToken, hashToken, TOKEN_REVOKED_CHANNEL } from '@envengine/api-tokens';
import { generatePoolPassword, poolRedisUsername, sha256Hex, tenantAttemptQueue, type PoolAclRegistry } from '@envengine/attempt-queues';
import type { PoolCredentialIssued, PoolStatus, PoolTokenOwner, PoolWorker } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { notFound, type Logger } from '@envengine/service-kit';
import type { RunRepository } from '../runs/run.repository.ts';
import type { WorkerRegistry } from '../runs/worker-registry.ts';
import type { WorkerDocument } from '../runs/run.schema.ts';
import type { PoolCredentialRepository } from './pool-credential.repository.ts';
import type { PoolStoreKeys } from './pool-store-keys.ts';

/**
 * Each tenant's remote pool: credentials (an API token for the worker API and a Redis ACL
 * user for the tenant's queue keys, issued and revoked together) and what the pool is doing.
 */
export class PoolService {
  constructor(
    private readonly credentials: PoolCredentialRepository,
    private readonly runs: RunRepository,
    private readonly workers: WorkerRegistry,
    private readonly acl: PoolAclRegistry,
    private readonly redis: RedisConnection,
    private readonly log: Logger,
    private readonly workerLivenessMs: number,
    /** Where workers reach the queues (PUBLIC_REDIS_URL): told in every credential. */
    private readonly publicRedisUrl: string,
    /** The credentials' keys to the engine's object store, when it has one. */
    private readonly storeKeys?: PoolStoreKeys,
  ) {}

  /**
   * The ACL user exists before the row that makes it known, so a reader of the row always
   * finds a working user; if the row cannot be written the user is taken away again.
   */
  async issue(tenantId: string, label: string | undefined, cause: EventCause): Promise<PoolCredentialIssued> {
    const id = newId('pcr');
    const token = generatePoolToken();
    const password = generatePoolPassword();
    const username = poolRedisUsername(id);
    const passwordSha256 = sha256Hex(password);
    await this.acl.apply({ username, passwordSha256, tenantId });
    const createdAt = new Date();
    try {
      await this.credentials.insert(tenantId, {
        _id: id,
        label: label ?? null,
        token_hash: hashToken(token),
        redis_username: username,
        redis_password_sha256: passwordSha256,
        created_at: createdAt,
        revoked_at: null,
      }, cause);
    } catch (error) {
      await this.acl.revoke(username).catch(() => undefined);
      throw error;
    }
    return { id, token, redis: { url: this.publicRedisUrl, username, password }, queue: tenantAttemptQueue(tenantId), created_at: createdAt.toISOString() };
  }

  /**
   * Revokes the token, the Redis user and the store keys at once: the user's open
   * connections are closed by Redis, and the keys its workers were given to the engine's
   * store are taken away (by a sweep, if the store is away now).
   */
  async revoke(tenantId: string, id: string, cause: EventCause): Promise<{ id: string; revoked_at: string }> {
    const revoked = await this.credentials.revoke(tenantId, id, cause);
    if (!revoked) throw notFound(`Pool credential "${id}"`);
    await this.acl.revoke(revoked.redis_username);
    // Gateways drop the token from their caches at once (their TTL bounds a missed message).
    await this.redis.publish(TOKEN_REVOKED_CHANNEL, revoked.token_hash).catch((error: Error) => {
      this.log.warn({ err: error.message }, 'could not broadcast a pool token revocation; gateway caches expire it');
    });
    await this.storeKeys?.afterRevoke(tenantId, id);
    return { id, revoked_at: revoked.revoked_at!.toISOString() };
  }

  async tokenOwner(tokenHash: string): Promise<PoolTokenOwner> {
    const owner = await this.credentials.ownerOfToken(tokenHash);
    if (!owner) throw notFound('Pool token');
    return { tenant_id: owner.tenant_id, credential_id: owner._id };
  }

  async status(tenantId: string): Promise<PoolStatus> {
    const [workers, engineRunners, attempts, credentials] = await Promise.all([
      this.workers.liveWorkers(tenantId, 'remote', this.workerLivenessMs),
      this.workers.liveWorkers(tenantId, 'local', this.workerLivenessMs),
      this.runs.attemptCounts(tenantId, 'remote'),
      this.credentials.active(tenantId),
    ]);
    const now = Date.now();
    return {
      queue: tenantAttemptQueue(tenantId),
      workers: workers.map((worker) => toPoolWorker(worker, now)),
      engine_runners: engineRunners.map((worker) => toPoolWorker(worker, now)),
      attempts,
      credentials: credentials.map((credential) => ({
        id: credential._id,
        label: credential.label,
        redis_username: credential.redis_username,
        created_at: credential.created_at.toISOString(),
      })),
    };
  }
}

function toPoolWorker(worker: WorkerDocument, now: number): PoolWorker {
  return {
    id: worker._id.slice(worker._id.lastIndexOf(':') + 1),
    name: worker.name,
    executor: worker.executor,
    credential_id: worker.credential_id,
    started_at: worker.started_at.toISOString(),
    last_heartbeat_at: worker.last_heartbeat_at.toISOString(),
    heartbeat_age_ms: Math.max(0, now - worker.last_heartbeat_at.getTime()),
    running: worker.running,
    concurrency: worker.concurrency,
    draining: worker.draining,
    sandbox: worker.sandbox,
  };
}
