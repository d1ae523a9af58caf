import { z } from 'zod';
import { GitInfo, ValidationItem } from './deployment-fields.ts';
import { EventActor } from './event-actor.ts';
import type { ExpireEnvironmentResult } from './environment.ts';
import type { TickShardResult } from './schedules.ts';

// The inputs of the deployment workflows: ids and small values, never documents. Checked
// where a workflow is started (deployment-service, workflow-worker) and where it begins
// (the workflow code: zod is pure, so parsing is deterministic).

// Ids are checked by kind (their prefix) and size, not by their full pattern: workflow
// tests run the workflows with ids of their own.
const idOf = (kind: string) => z.string().max(64).regex(new RegExp(`^${kind}_[0-9a-z_]+$`), { message: `must be a ${kind}_ id` });
const EnvironmentId = idOf('env');
const DeploymentId = idOf('dep');

/** Which environment a workflow works on: ids and its name. */
export const EnvironmentScope = z.strictObject({
  tenantId: idOf('ten'),
  environmentId: EnvironmentId,
  environmentName: z.string().min(1).max(63),
});
export type EnvironmentScope = z.infer<typeof EnvironmentScope>;

/**
 * Who caused a workflow's changes: the API token (`tok_…`) and request that started it,
 * which the events it records name. Absent (the engine's own work, or a workflow started
 * before causes were carried), its events name `engine`.
 */
export const WorkflowCause = z.strictObject({
  actor: EventActor,
  request_id: z.string().min(1).max(200).nullable(),
});
export type WorkflowCause = z.infer<typeof WorkflowCause>;

/**
 * The ingest's input. The manifest was stored under the deployment id before the workflow
 * started; the activity that validates it reads it from there.
 */
export const IngestInput = EnvironmentScope.extend({
  deploymentId: DeploymentId,
  /** The environment as the deployment-service read it when the ingest arrived. */
  strict: z.boolean(),
  activeDeploymentId: DeploymentId.nullable(),
  // Checked by the ingest itself (an empty or unknown ref fails the deployment with a reason), not here.
  bundleRef: z.string(),
  git: GitInfo,
  sdkVersion: z.string().nullable(),
  activate: z.boolean(),
  allowContractChanges: z.array(z.string()),
  createdBy: z.string().nullable(),
  /** A promotion's source deployment (absent on ingests, and on those started before promotions). */
  promotedFrom: DeploymentId.nullable().optional(),
  /** Problems with the ingest fields beside the manifest; they fail the deployment. */
  fieldErrors: z.array(ValidationItem),
  /** The request that asked for the ingest (and its activation). */
  cause: WorkflowCause.optional(),
});
export type IngestInput = z.infer<typeof IngestInput>;

export const ActivateInput = EnvironmentScope.extend({
  deploymentId: DeploymentId,
  /** The request that asked for the activation (an ingest's, or a rollback's). */
  cause: WorkflowCause.optional(),
});
export type ActivateInput = z.infer<typeof ActivateInput>;

/** What an environment's activation workflow is asked to do, and whom it answers. */
export const ActivationRequest = z.strictObject({
  deploymentId: DeploymentId,
  /** The workflow run waiting for the outcome (an ingest or an `activate-…` workflow). */
  replyTo: z.object({ workflowId: z.string().min(1), runId: z.string().min(1) }),
  /** The request that asked for it, handed on to the activation's events. */
  cause: WorkflowCause.optional(),
});
export type ActivationRequest = z.infer<typeof ActivationRequest>;

/** How an activation's step is retried before the activation fails. */
export const ActivationRetry = z.object({
  maximumAttempts: z.number().int().positive(),
  /** A Temporal duration, such as `5 seconds`. */
  maximumInterval: z.string().min(1),
});
export type ActivationRetry = z.infer<typeof ActivationRetry>;

export const EnvironmentActivationsInput = EnvironmentScope.extend({
  /** Requests carried over a continue-as-new. */
  pending: z.array(ActivationRequest),
  /** Keys of the requests served last, carried over so that a late repeat is not served again. */
  served: z.array(z.string()),
  /** Default `DEFAULT_ACTIVATION_RETRY`; tests shorten it. */
  retry: ActivationRetry.optional(),
});
export type EnvironmentActivationsInput = z.infer<typeof EnvironmentActivationsInput>;

/**
 * The argument a Temporal Schedule of the first design (`sched-<environment id>-<name>`)
 * gave each tick's workflow: read once more at start-up, when such schedules are replaced
 * by stored ones and deleted.
 */
export const ScheduledRunInput = EnvironmentScope.extend({
  schedule: z.string().min(1),
  job: z.string().min(1),
  cron: z.string().min(1),
  timezone: z.string().min(1),
});
export type ScheduledRunInput = z.infer<typeof ScheduledRunInput>;

// Names of the environment lifecycle's workflows, shared by the placement-service (which
// starts and signals them) and the workflow-worker (which runs them).
/** The workflow-worker's task queue, unless configured otherwise. */
export const DEFAULT_TASK_QUEUE = 'deployments';
export const ENVIRONMENT_TEARDOWN_WORKFLOW = 'environmentTeardown';
export const ENVIRONMENT_EXPIRY_WORKFLOW = 'environmentExpiry';
/** To the expiry workflow: the preview's new expiry (an ISO 8601 instant; null removes the TTL). */
export const EXPIRY_MOVED_SIGNAL = 'expiryMoved';
/** One per environment: a second delete joins the tear-down already under way. */
export const environmentTeardownWorkflowId = (environmentId: string) => `teardown-${environmentId}`;
export const environmentExpiryWorkflowId = (environmentId: string) => `expiry-${environmentId}`;

/**
 * The task queue of one scope's own activities, served by the service that owns their data
 * (libs/temporal-worker): named after the workflows' queue, so that stacks sharing a
 * Temporal namespace, each with its own workflows' queue, keep theirs apart too.
 */
export const scopeTaskQueue = (workflowQueue: string, scope: ScopeWithActivities) => `${workflowQueue}-${scope}`;
/** The scopes whose services serve activities of their own. */
export type ScopeWithActivities = 'placement' | 'secrets';
/**
 * The workflows' patch (`patched`) under which they schedule a scope's activities on its own
 * queue: a history begun before it keeps the workflows' queue, where the workflow-worker
 * still serves those activities over the owner's internal API.
 */
export const SCOPE_TASK_QUEUES_PATCH = 'scope-task-queues';
/**
 * A scope's activity heartbeats every 2 s while it runs (libs/temporal-worker): one silent
 * this long ran in a service that died, and is tried again (by another replica, or by the
 * same service once it is back), not after the step's whole time limit.
 */
export const SCOPE_HEARTBEAT_TIMEOUT = '10 seconds';

export const SCHEDULE_TICKS_WORKFLOW = 'scheduleTicks';
/** The tick loops' one activity, served on the placement scope's queue by the placement-service, which owns the stored schedules. */
export interface ScheduleTickActivities {
  /** One pass over the shard's due schedules; answers the shard's next fire time. */
  tickSchedules(input: { shard: number }): Promise<TickShardResult>;
}
/** To a shard's tick loop: its schedules changed, so its earliest fire time may be sooner than the one it sleeps until. */
export const SCHEDULES_CHANGED_SIGNAL = 'schedulesChanged';
/**
 * One long-running tick loop per shard of the stored schedules
 * (docs/design.md#schedules-pause-and-resume): `schedule-ticks-<shard>`, with the task queue
 * in it when it is not the default one, so that stacks sharing a Temporal namespace (each
 * with its own queue) each have their own.
 */
export const scheduleTicksWorkflowId = (shard: number, taskQueue: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? `schedule-ticks-${shard}` : `schedule-ticks-${taskQueue}-${shard}`;

/** A shard's tick loop: which shard; `passes` made so far, carried over a continue-as-new, for the Temporal UI. */
export const ScheduleTicksInput = z.object({ shard: z.number().int().nonnegative(), passes: z.number().int().nonnegative().default(0) });
export type ScheduleTicksInput = z.infer<typeof ScheduleTicksInput>;

/** An environment's tear-down (`teardown-<environment id>`): it works from the ids; the purge flag was stored when the delete was accepted. */
export const EnvironmentTeardownInput = EnvironmentScope.extend({
  /** Remove the materialization files through the storage driver too. */
  purgeData: z.boolean(),
  /**
   * Begun by the TTL lapsing (the expiry timer's own call): the timer is left to end by
   * itself rather than terminated. Absent in histories of tear-downs started before it.
   */
  expired: z.boolean().default(false),
});
export type EnvironmentTeardownInput = z.infer<typeof EnvironmentTeardownInput>;

/** The tear-down's first step: what could start work stops. */
export const StopEnvironmentWorkflowsInput = EnvironmentScope.extend({ expired: z.boolean() });
export type StopEnvironmentWorkflowsInput = z.infer<typeof StopEnvironmentWorkflowsInput>;

/** A preview's expiry timer (`expiry-<environment id>`): sleeps until `expiresAt`, moved by each deploy's signal. */
export const EnvironmentExpiryInput = EnvironmentScope.extend({
  expiresAt: z.iso.datetime(),
});
export type EnvironmentExpiryInput = z.infer<typeof EnvironmentExpiryInput>;

/**
 * The steps of an environment's tear-down and expiry on the placement scope's data, served on
 * its own queue (`scopeTaskQueue`) by the placement-service. Each is idempotent, so a retry or
 * a resumed tear-down repeats it safely.
 */
export interface PlacementLifecycleActivities {
  /** Deletes its stored schedules (and any Temporal Schedule of the first design left of it). */
  deleteEnvironmentSchedules(input: EnvironmentScope): Promise<{ deleted: number }>;
  /** Cancels what is left of its runs (withdrawn from their queues), then removes runs, attempts and logs. */
  removeEnvironmentRuns(input: EnvironmentScope): Promise<Record<string, number>>;
  /**
   * Removes one page of its materialization files through the storage driver (`purge_data`),
   * those recorded after `after`; answers where the next page starts (null: done). A page
   * per activity, so that a large environment's purge goes on from where a failure left it.
   */
  purgeMaterializationFiles(input: EnvironmentScope & { after: string | null }): Promise<{ removed: number; next: string | null }>;
  /** The last step: the environment's document goes, and its name is free again. */
  removeEnvironment(input: EnvironmentScope): Promise<void>;
  /** The TTL's timer fired: begins the tear-down unless a deploy moved the expiry (then the new instant). */
  expireEnvironment(input: EnvironmentExpiryInput): Promise<ExpireEnvironmentResult>;
  /** The TTL lapses within the notice: records `environment.expiring` once for that expiry, if it still is the environment's. */
  noticeEnvironmentExpiry(input: EnvironmentExpiryInput): Promise<{ noticed: boolean }>;
}

/** The tear-down's step on the secrets scope's data, served on its own queue (`scopeTaskQueue`) by the secrets-service. */
export interface SecretsLifecycleActivities {
  /** Deletes its bindings and retires its secrets in their backend (every version destroyed), with their audit rows. */
  retireEnvironmentSecrets(input: EnvironmentScope): Promise<Record<string, number>>;
}
