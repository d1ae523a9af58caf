import { z } from 'zod';

/** `POST /api/v1/pool/credentials`: shown once; only hashes are kept. */
export const PoolCredentialIssued = z.object({
  id: z.string(),
  /** Opens only the worker API (`/api/v1/worker/…`) of the tenant. */
  token: z.string(),
  /**
   * A Redis ACL user that reaches only the tenant's queue keys, and where workers reach
   * their queues: the engine's pool gate (PUBLIC_REDIS_URL, no credential in it; null in a
   * credential saved before it was given).
   */
  redis: z.object({ url: z.string().nullable().default(null), username: z.string(), password: z.string() }),
  /** The BullMQ queue the pool's workers take attempts from. */
  queue: z.string(),
  created_at: z.iso.datetime(),
});
export type PoolCredentialIssued = z.infer<typeof PoolCredentialIssued>;

export const CreatePoolCredentialRequest = z.strictObject({
  label: z.string().min(1).max(200).optional(),
});

export const PoolCredentialPathParams = z.object({ id: z.string().min(1).max(100) });

export const PoolCredentialRevoked = z.object({ id: z.string(), revoked_at: z.iso.datetime() });

export const PoolWorker = z.object({
  id: z.string(),
  name: z.string(),
  executor: z.enum(['local', 'remote']),
  credential_id: z.string().nullable(),
  started_at: z.iso.datetime(),
  last_heartbeat_at: z.iso.datetime(),
  heartbeat_age_ms: z.number().int().nonnegative(),
  running: z.array(z.string()),
  concurrency: z.number().int().positive(),
  draining: z.boolean(),
  /** `bwrap` when user code runs in the OS sandbox; `off` when the worker was started with SANDBOX=off. */
  sandbox: z.enum(['bwrap', 'off']),
});
export type PoolWorker = z.infer<typeof PoolWorker>;

/** `GET /api/v1/pool`: the tenant's live remote workers and its attempts in flight. */
export const PoolStatus = z.object({
  queue: z.string(),
  workers: z.array(PoolWorker),
  /** The engine's own runners (executor `local`) that reported for this tenant's attempts lately, with how they sandbox user code. */
  engine_runners: z.array(PoolWorker),
  attempts: z.object({ queued: z.number().int().nonnegative(), running: z.number().int().nonnegative() }),
  credentials: z.array(z.object({ id: z.string(), label: z.string().nullable(), redis_username: z.string(), created_at: z.iso.datetime() })),
});
export type PoolStatus = z.infer<typeof PoolStatus>;

/** Internal: the gateway resolves a pool token to its tenant through the placement-service. */
export const PoolTokenOwner = z.object({ tenant_id: z.string(), credential_id: z.string() });
export type PoolTokenOwner = z.infer<typeof PoolTokenOwner>;

export const PoolTokenHashParams = z.object({ hash: z.string().regex(/^[0-9a-f]{64}$/, { message: 'must be a SHA-256 hex digest' }) });
