import { readFileSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { redisUrlSetting } from '@envengine/redis-connections';
import { TracingSettings } from '@envengine/tracing';
import { BUNDLE_UNPACKED_DEFAULTS, PoolCredentialIssued } from '@envengine/contracts';
import { InternalCredential, LogLevel, parseConfig, PortFromEnv, PositiveIntFromEnv, ServiceOriginsFromEnv } from '@envengine/process-kit';

/**
 * One program, two modes: `--local` is the engine's own runner (started by the stack,
 * with the internal credential, on the engine's `local` queue); `--pool` is a worker of a
 * tenant's pool (started by the tenant with a pool credential, reaching only the gateway
 * and Redis).
 */
const common = {
  REDIS_URL: redisUrlSetting('the attempt queues'),
  WORKER_NAME: z.string().min(1).max(200).default(`${hostname()}-${process.pid}`),
  /** Attempts run at once by this process. */
  CONCURRENCY: PositiveIntFromEnv(4),
  /** How often leases are renewed; keep well below the placement-service's ATTEMPT_LEASE_TTL_MS. */
  HEARTBEAT_INTERVAL_MS: PositiveIntFromEnv(2_000),
  /** Wall-clock limit of one asset's user code. */
  ASSET_TIMEOUT_MS: PositiveIntFromEnv(15 * 60_000),
  /** Memory limit of one asset's child process: its V8 heap, and its Buffers beside the runtime's own reservations. */
  ASSET_MEMORY_MB: PositiveIntFromEnv(512),
  /** CPU time one asset's child may use; past it the child is killed (SIGXCPU). */
  ASSET_CPU_SECONDS: PositiveIntFromEnv(15 * 60),
  /** Size of each child's private /tmp (memory-backed, and counted in the child's cgroup). */
  ASSET_TMP_MB: PositiveIntFromEnv(64),
  /** Processes and threads one asset's child may have at once (its cgroup's pids.max); Node alone runs about a dozen threads. */
  ASSET_MAX_PROCESSES: PositiveIntFromEnv(64),
  /** CPU one asset's child may use at once, in cores (its cgroup's quota). */
  ASSET_CPU_CORES: z.coerce.number({ message: 'must be a number of cores, such as 1 or 0.5' }).min(0.01).max(1024).default(1),
  /**
   * A cgroup per asset child (memory with tmpfs, processes, CPU; v1 or v2). `required`
   * stops the worker where the host cannot give them (the default of the engine's
   * runner, which serves every tenant); `auto` runs without them and says so once (the
   * default of a pool worker, on the tenant's own host); `off` never makes them.
   */
  ASSET_CGROUPS: z.enum(['required', 'auto', 'off'], { message: 'must be "required", "auto" or "off"' }).optional(),
  /**
   * A seccomp filter in each asset's sandbox (seccomp-filter.py, built at start with
   * Debian's python3-seccomp). `required` stops the worker where it cannot be built (the
   * default of the engine's runner); `auto` runs without it and says so once (the default
   * of a pool worker); `off` never builds it. SANDBOX=off has no sandbox, hence no filter.
   */
  ASSET_SECCOMP: z.enum(['required', 'auto', 'off'], { message: 'must be "required", "auto" or "off"' }).optional(),
  /**
   * `bwrap` (default): every asset runs in a bubblewrap sandbox
   * (docs/design.md#tenants-code-in-an-os-sandbox). `off` runs user code under Node's
   * permission model alone, which is no protection against hostile code; it must be set
   * explicitly, is logged as a warning and shown in the pool view.
   */
  SANDBOX: z.enum(['bwrap', 'off'], { message: 'must be "bwrap" (the default) or "off"' }).default('bwrap'),
  /** Sandboxed children forked ahead of need (each still runs one asset); 0 forks each on demand. Default: CONCURRENCY. */
  WARM_SANDBOXES: z.coerce.number().int().min(0).max(256).optional(),
  /** A child forked ahead and unused for this long is stopped. */
  WARM_SANDBOX_IDLE_MS: PositiveIntFromEnv(60_000),
  /** On SIGTERM: how long running attempts may go on before they are handed back. */
  DRAIN_TIMEOUT_MS: PositiveIntFromEnv(30_000),
  /**
   * Bundles, cached by digest. The sandbox reads them as an unprivileged user, so as root
   * the default is under /var/cache (a home directory such as /root is closed to others).
   */
  BUNDLE_CACHE_DIR: z
    .string()
    .min(1)
    .default(process.getuid?.() === 0 ? '/var/cache/envengine/bundles' : join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'envengine', 'bundles')),
  /** What one bundle may unpack to, and how many files it may hold (checked again here, as it is unpacked). */
  BUNDLE_MAX_UNPACKED_MB: PositiveIntFromEnv(BUNDLE_UNPACKED_DEFAULTS.maxUnpackedMb),
  BUNDLE_MAX_FILES: PositiveIntFromEnv(BUNDLE_UNPACKED_DEFAULTS.maxFiles),
  /** The bundle cache's bound on disk; past it the least recently used bundles that no attempt runs from are removed. */
  BUNDLE_CACHE_MAX_MB: PositiveIntFromEnv(4096),
  /** Where an emit's Parquet file is written as its rows arrive, before it is stored: the worker's own disk, never memory. */
  SPOOL_DIR: z
    .string()
    .min(1)
    .default(process.getuid?.() === 0 ? '/var/cache/envengine/spool' : join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'envengine', 'spool')),
  /** The largest materialization one emit may write, in MiB of Parquet; past it the asset fails. */
  MATERIALIZATION_MAX_MB: PositiveIntFromEnv(8192),
  HOST: z.string().default('127.0.0.1'),
  PORT: PortFromEnv(8085),
  LOG_LEVEL: LogLevel,
  ...TracingSettings.shape,
};

const localSchema = z.object({
  ...common,
  mode: z.literal('local'),
  INTERNAL_CREDENTIAL: InternalCredential,
  /** The engine's runner calls the owning services directly, never the public gateway. */
  PLACEMENT_SERVICE_URL: ServiceOriginsFromEnv('placement-service', 'http://127.0.0.1:8081'),
  DEPLOYMENT_SERVICE_URL: ServiceOriginsFromEnv('deployment-service', 'http://127.0.0.1:8082'),
  /**
   * Object-store endpoints a binding may name although they are on the engine's network
   * (loopback, private, link-local), comma-separated; the runner refuses any other such
   * address. The stack sets the engine's own store.
   */
  STORAGE_ENDPOINTS_ALLOWED: z
    .string()
    .default('')
    .transform((list, context) => {
      const origins = new Set<string>();
      for (const entry of list.split(',').map((item) => item.trim()).filter(Boolean)) {
        if (!URL.canParse(entry)) context.addIssue({ code: 'custom', message: `${entry} is not a URL` });
        else origins.add(new URL(entry).origin);
      }
      return origins;
    }),
});

const poolSchema = z.object({
  ...common,
  mode: z.literal('pool'),
  /** The gateway, e.g. `http://127.0.0.1:8080`: the worker API is under `/api/v1/worker/`. */
  API_URL: z.url({ message: 'must be the gateway URL' }),
  /** From `POST /api/v1/pool/credentials`: the token opens only this tenant's worker API. */
  POOL_TOKEN: z.string({ message: 'is required in --pool mode (the credential\'s token)' }).regex(/^eew_/, { message: 'must be a pool token (eew_…)' }),
  REDIS_USERNAME: z.string({ message: 'is required in --pool mode (the credential\'s Redis user)' }).min(1),
  REDIS_PASSWORD: z.string({ message: 'is required in --pool mode (the credential\'s Redis password)' }).min(1),
  /** The pool's queue, `attempts-<tenant id>`, as the credential names it. */
  POOL_QUEUE: z.string({ message: 'is required in --pool mode (the credential\'s queue)' }).regex(/^attempts-ten_[0-9a-z]{26}$/),
  /** Health port: a free one by default, so that a pool worker never collides with the engine's runner (8085) or another worker. */
  PORT: PortFromEnv(0),
});

export type WorkerConfig = z.infer<typeof localSchema> | z.infer<typeof poolSchema>;

/**
 * A pool worker's settings from its credential file (`POOL_CREDENTIAL_FILE`, what
 * `envctl pool credentials create --save FILE` writes): token, Redis user, queue and the
 * Redis the engine advertises. A variable set in the environment wins over the file.
 */
function credentialFileSettings(path: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`Invalid configuration:\n  POOL_CREDENTIAL_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`Invalid configuration:\n  POOL_CREDENTIAL_FILE: ${path} is not JSON (expected what envctl pool credentials create --save FILE writes)`);
  }
  const parsed = PoolCredentialIssued.safeParse(json);
  if (!parsed.success) {
    throw new Error(`Invalid configuration:\n  POOL_CREDENTIAL_FILE: ${path} lacks ${parsed.error.issues.map((issue) => issue.path.join('.')).join(', ')}`);
  }
  const credential = parsed.data;
  return {
    POOL_TOKEN: credential.token,
    REDIS_USERNAME: credential.redis.username,
    REDIS_PASSWORD: credential.redis.password,
    POOL_QUEUE: credential.queue,
    ...(credential.redis.url ? { REDIS_URL: credential.redis.url } : {}),
  };
}

export function loadWorkerConfig(argv: readonly string[], env: Record<string, string | undefined>): WorkerConfig {
  const local = argv.includes('--local');
  const pool = argv.includes('--pool');
  if (local === pool) throw new Error('Start the attempt-worker with exactly one of --local (the engine\'s runner) or --pool (a tenant\'s worker).');
  if (local) return parseConfig(localSchema, { ...env, mode: 'local' });
  const fromFile = env.POOL_CREDENTIAL_FILE ? credentialFileSettings(env.POOL_CREDENTIAL_FILE) : {};
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  return parseConfig(poolSchema, { ...fromFile, ...given, mode: 'pool' });
}
