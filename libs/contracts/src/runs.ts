import { z } from 'zod';
import { MAX_TIMEOUT_SECONDS } from './timeouts.ts';
import { Executor } from './environment.ts';

export const RunStatus = z.enum(['queued', 'running', 'succeeded', 'failed', 'canceled']);
export type RunStatus = z.infer<typeof RunStatus>;
export const TERMINAL_RUN_STATUSES = ['succeeded', 'failed', 'canceled'] as const satisfies readonly RunStatus[];

export const AttemptStatus = z.enum(['queued', 'running', 'succeeded', 'failed', 'lost', 'canceled']);
export type AttemptStatus = z.infer<typeof AttemptStatus>;
export const TERMINAL_ATTEMPT_STATUSES = ['succeeded', 'failed', 'lost', 'canceled'] as const satisfies readonly AttemptStatus[];

export const RunTrigger = z.enum(['manual', 'schedule']);
export type RunTrigger = z.infer<typeof RunTrigger>;

/** What happened to one asset within one attempt; `canceled`: it had not finished when its attempt was canceled. */
export const AssetOutcomeStatus = z.enum(['pending', 'running', 'succeeded', 'failed', 'skipped', 'canceled']);
export type AssetOutcomeStatus = z.infer<typeof AssetOutcomeStatus>;

export const AttemptAssetOutcome = z.object({
  key: z.string(),
  status: AssetOutcomeStatus,
  materialization_id: z.string().nullable(),
  error: z.string().nullable(),
});
export type AttemptAssetOutcome = z.infer<typeof AttemptAssetOutcome>;

export const Attempt = z.object({
  id: z.string(),
  run_id: z.string(),
  number: z.number().int().positive(),
  /** Fixed when the attempt is dispatched, from the environment's executor at that moment. */
  executor: Executor,
  status: AttemptStatus,
  /** The worker that took it (`null` while queued). */
  worker: z.string().nullable(),
  dispatched_at: z.iso.datetime(),
  started_at: z.iso.datetime().nullable(),
  finished_at: z.iso.datetime().nullable(),
  last_heartbeat_at: z.iso.datetime().nullable(),
  error: z.string().nullable(),
  assets: z.array(AttemptAssetOutcome),
  /** The upstream materializations its assets read (`ctx.read`), and from which environment: a preview reads its parent's where it has none. */
  reads: z.array(z.object({ asset: z.string(), upstream: z.string(), materialization_id: z.string(), environment: z.string() })),
});
export type Attempt = z.infer<typeof Attempt>;

export const Run = z.object({
  id: z.string(),
  environment_id: z.string(),
  deployment_id: z.string(),
  trigger: RunTrigger,
  schedule: z.string().nullable(),
  job: z.string().nullable(),
  /** The assets the run materializes, in dependency order. */
  assets: z.array(z.string()),
  status: RunStatus,
  max_attempts: z.number().int().min(1).max(10),
  /** The run's time limit from its start, or null (then only each asset's and the runner's). */
  timeout_seconds: z.number().int().positive().nullable(),
  attempts: z.array(Attempt),
  /** True while the current attempt is a queued `remote` one and no worker of the pool is alive. */
  waiting_for_worker: z.boolean(),
  /** True while the run waits for one of its environment's `max_concurrent_runs` slots (it is `queued`, behind older runs). */
  waiting_for_slot: z.boolean(),
  inserted_at: z.iso.datetime(),
  started_at: z.iso.datetime().nullable(),
  finished_at: z.iso.datetime().nullable(),
  error: z.string().nullable(),
});
export type Run = z.infer<typeof Run>;

const AssetKeyName = z.string().min(1).max(200);

/** `POST /api/v1/environments/:name/runs`: a job or a list of assets, never both. */
const runTarget = {
  job: z.string().min(1).max(200),
  assets: z.array(AssetKeyName).min(1, { message: 'must name at least one asset' }).max(500),
};

const runOptions = {
  max_attempts: z.number().int().min(1, { message: 'must be between 1 and 10' }).max(10, { message: 'must be between 1 and 10' }).default(1),
  /** The run's time limit from its start, across its attempts (each asset's limit is the least of this, its own and the runner's). */
  timeout_seconds: z
    .number()
    .int({ message: 'must be a whole number of seconds' })
    .min(1, { message: `must be between 1 and ${MAX_TIMEOUT_SECONDS}` })
    .max(MAX_TIMEOUT_SECONDS, { message: `must be between 1 and ${MAX_TIMEOUT_SECONDS}` })
    .optional(),
};

/** A run of a job of the active deployment (how the document describes one form of the body). */
export const CreateRunForJob = z.strictObject({ job: runTarget.job, ...runOptions });
/** A run of the named assets (the other form). */
export const CreateRunForAssets = z.strictObject({ assets: runTarget.assets, ...runOptions });

export const CreateRunRequest = z
  .strictObject({ job: runTarget.job.optional(), assets: runTarget.assets.optional(), ...runOptions })
  .superRefine((body, ctx) => {
    if ((body.job === undefined) === (body.assets === undefined)) {
      ctx.addIssue({ code: 'custom', path: body.job === undefined ? [] : ['assets'], message: 'give exactly one of "job" or "assets"' });
    }
  });
export type CreateRunRequest = z.infer<typeof CreateRunRequest>;

/** What starts a run besides the public body: the schedule path sets the trigger. */
export const RunOrigin = z.object({
  trigger: RunTrigger,
  schedule: z.string().nullable(),
  /** A scheduled run's tick (its wall time in the schedule's zone): one run per schedule and tick. */
  tick: z.string().nullable(),
});
export type RunOrigin = z.infer<typeof RunOrigin>;

export const RunPathParams = z.object({ id: z.string().min(1).max(100) });

export const RunListQuery = z.strictObject({
  status: RunStatus.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** Paging: the id of the last run of the previous page (runs are listed newest first). */
  before: z.string().min(1).max(100).optional(),
});
export type RunListQuery = z.infer<typeof RunListQuery>;

export const RunLogLine = z.object({
  /** Opaque, increasing within a run: pass the last one as `after` to read on. */
  cursor: z.string(),
  attempt_id: z.string(),
  attempt: z.number().int().positive(),
  asset: z.string().nullable(),
  at: z.iso.datetime(),
  message: z.string(),
});
export type RunLogLine = z.infer<typeof RunLogLine>;

export const RunLogsQuery = z.strictObject({
  after: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(5000).default(1000),
});
export type RunLogsQuery = z.infer<typeof RunLogsQuery>;

/** `POST /api/v1/runs/:id/cancel`: body optional, `{}`. */
export const CancelRunRequest = z.strictObject({});
