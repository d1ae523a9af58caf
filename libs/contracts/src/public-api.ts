import { z } from 'zod';
import { Binding, BindingPathParams, PutBindingRequest } from './bindings.ts';
import {
  ActivateRequest,
  AssetListing,
  BundlePathParams,
  BundleUploaded,
  CreateDeploymentRequest,
  Deployment,
  DeploymentDiff,
  DeploymentDiffQuery,
  DeploymentListQuery,
  DeploymentPathParams,
  DeploymentPending,
  PromoteRequest,
  AssetMaterializationPathParams,
  AssetPathParams,
  Materialization,
  MaterializationListQuery,
  MaterializationPreview,
  MaterializationPreviewQuery,
} from './deployments.ts';
import {
  CreateEnvironmentRequest,
  DeletedEnvironment,
  DeleteEnvironmentQuery,
  Environment,
  EnvironmentPathParams,
  PatchEnvironmentRequest,
  PlacementResult,
  ScheduleToggleRequest,
  SetPlacementRequest,
} from './environment.ts';
import type { Scope } from './access.ts';
import type { ErrorCode } from './errors.ts';
import { EngineEvent, EventListQuery } from './events.ts';
import { PARQUET_MEDIA_TYPE, PUBLIC_API_BASE, type RouteContract } from './route-contract.ts';
import { CreatePoolCredentialRequest, PoolCredentialIssued, PoolCredentialPathParams, PoolCredentialRevoked, PoolStatus } from './pool.ts';
import { Attempt, CancelRunRequest, CreateRunForAssets, CreateRunForJob, CreateRunRequest, Run, RunListQuery, RunLogLine, RunLogsQuery, RunPathParams } from './runs.ts';
import { Quotas } from './quotas.ts';
import {
  CreateWebhookRequest,
  UpdateWebhookRequest,
  Webhook,
  WebhookCreated,
  WebhookDeleted,
  WebhookDelivery,
  WebhookDeliveryListQuery,
  WebhookPathParams,
  WebhookSecretRotated,
  WebhookTestSent,
} from './webhooks.ts';
import { ApiToken, ApiTokenCreated, ApiTokenPathParams, ApiTokenRevoked, CreateTokenRequest } from './tokens.ts';
import { Schedule, ScheduleNextFireTimes, ScheduleNextQuery, SchedulePathParams } from './schedules.ts';
import { DeletedResource, PutSecretRequest, SecretPathParams, SecretRow } from './secrets.ts';
import {
  AppendLogsRequest,
  ATTEMPT_LEASE_HEADER,
  ATTEMPT_LEASE_PATTERN,
  AttemptStarted,
  ConnectionRequest,
  FinishAttemptRequest,
  MaterializationWritten,
  ReleaseAttemptRequest,
  ResolvedConnection,
  StartAttemptRequest,
  StorageConnection,
  StorageRequest,
  UpstreamLocation,
  UpstreamQuery,
  WorkerAssetParams,
  WorkerAttemptParams,
  WorkerConnectionParams,
  WorkerHeartbeatRequest,
  WorkerHeartbeatResponse,
} from './worker-api.ts';

/** The internal service that serves a public path (the gateway forwards to it). */
export type ApiService = 'gateway' | 'placement' | 'deployment' | 'secrets';

export interface RequestHeader {
  readonly name: string;
  readonly required: boolean;
  readonly description: string;
  /** The value's rule, as the server checks it; the document shows it as the header's pattern. */
  readonly pattern?: RegExp;
}

/** An Idempotency-Key: 1-255 visible ASCII characters (the gateway's check and the document's pattern). */
export const IDEMPOTENCY_KEY_PATTERN = /^[!-~]{1,255}$/;

/**
 * One public route: what it takes, what it answers and which refusals it can give beyond
 * the ones every route can (401, 429, 500, 503; 422 and 400/413 for a route with input).
 * The services mount their handlers from these, the gateway's OpenAPI document is
 * generated from them, and the integration suite checks every answer against that.
 */
export interface Endpoint extends RouteContract {
  readonly base: typeof PUBLIC_API_BASE;
  readonly service: ApiService;
  readonly tag: string;
  readonly summary: string;
  readonly description?: string;
  readonly auth: 'api_token' | 'pool_token';
  /** The scope an API token needs for it (the gateway checks it); null for the worker API, which a pool token opens. */
  readonly scope: Scope | null;
  /**
   * An operation on the tenant as a whole (its pool, its webhooks, every environment's
   * placement): a token limited to environments is refused it (403 `insufficient_scope`).
   */
  readonly tenantWide?: true;
  /**
   * What the document shows as the body when `body` is checked by the handler itself
   * (an ingest records a failed deployment for a body that fails its checks).
   */
  readonly describedBody?: z.ZodType;
  readonly headers?: readonly RequestHeader[];
  /** Domain refusals this route can answer with (docs/design.md#wire-conventions). */
  readonly errors: readonly ErrorCode[];
}

function endpoint<const E extends Omit<Endpoint, 'base'>>(definition: E): E & { readonly base: typeof PUBLIC_API_BASE } {
  return { ...definition, base: PUBLIC_API_BASE };
}

const LEASE_HEADER: RequestHeader = {
  name: ATTEMPT_LEASE_HEADER,
  required: true,
  description: 'The lease the worker got when it started the attempt; a write under a superseded lease is refused.',
  pattern: ATTEMPT_LEASE_PATTERN,
};

const IDEMPOTENCY_HEADER: RequestHeader = {
  name: 'Idempotency-Key',
  required: false,
  description: 'Runs the POST at most once per tenant and key (1-255 visible ASCII characters); a repeat gets the first answer.',
  pattern: IDEMPOTENCY_KEY_PATTERN,
};

/** Every public route of `/api/v1`, by operation id. */
export const PublicApi = {
  // Environments and placement
  listEnvironments: endpoint({
    method: 'get', path: '/environments', service: 'placement', tag: 'Environments', auth: 'api_token', scope: 'environments:read',
    summary: 'List the environments of the tenant',
    responses: { 200: z.array(Environment) }, errors: [],
  }),
  createEnvironment: endpoint({
    method: 'post', path: '/environments', service: 'placement', tag: 'Environments', auth: 'api_token', scope: 'environments:write',
    summary: 'Create an environment',
    body: CreateEnvironmentRequest, headers: [IDEMPOTENCY_HEADER],
    responses: { 201: Environment }, errors: ['not_found', 'environment_exists', 'storage_prefix_taken', 'environments_quota_exceeded', 'previews_quota_exceeded', 'environment_deleting'],
  }),
  getEnvironment: endpoint({
    method: 'get', path: '/environments/:name', service: 'placement', tag: 'Environments', auth: 'api_token', scope: 'environments:read',
    summary: 'Get an environment',
    params: EnvironmentPathParams, responses: { 200: Environment }, errors: ['not_found', 'environment_expired'],
  }),
  updateEnvironment: endpoint({
    method: 'patch', path: '/environments/:name', service: 'placement', tag: 'Environments', auth: 'api_token', scope: 'environments:write',
    summary: 'Change egress, strict binding, TTL or the run limit of an environment',
    params: EnvironmentPathParams, body: PatchEnvironmentRequest,
    responses: { 200: Environment }, errors: ['not_found', 'environment_expired', 'environment_deleting'],
  }),
  deleteEnvironment: endpoint({
    method: 'delete', path: '/environments/:name', service: 'placement', tag: 'Environments', auth: 'api_token', scope: 'environments:write',
    summary: 'Delete an environment and everything it holds',
    description: 'Answers once the tear-down is complete, or 503 with Retry-After while it goes on (a repeat joins it). A parent with live previews is 409 `environment_has_previews` unless `force=true`, which tears the previews down first.',
    params: EnvironmentPathParams, query: DeleteEnvironmentQuery,
    responses: { 200: DeletedEnvironment }, errors: ['not_found', 'environment_expired', 'runs_running', 'environment_has_previews'],
  }),
  setPlacementForAll: endpoint({
    method: 'post', path: '/placement', service: 'placement', tag: 'Environments', auth: 'api_token', scope: 'environments:write', tenantWide: true,
    summary: 'Set the executor of every environment of the tenant',
    body: SetPlacementRequest, headers: [IDEMPOTENCY_HEADER],
    responses: { 200: PlacementResult }, errors: [],
  }),
  setPlacement: endpoint({
    method: 'post', path: '/environments/:name/placement', service: 'placement', tag: 'Environments', auth: 'api_token', scope: 'environments:write',
    summary: 'Set the executor of one environment',
    params: EnvironmentPathParams, body: SetPlacementRequest, headers: [IDEMPOTENCY_HEADER],
    responses: { 200: Environment }, errors: ['not_found', 'environment_deleting'],
  }),

  // Quotas
  getQuotas: endpoint({
    method: 'get', path: '/quotas', service: 'placement', tag: 'Quotas', auth: 'api_token', scope: 'environments:read',
    summary: "The tenant's quotas: each one's limit and the use now",
    description: 'A request past a quota is 429 with Retry-After and the code `<quota>_quota_exceeded`. The operator sets limits per tenant (`npm run admin -- quota set`).',
    responses: { 200: Quotas }, errors: [],
  }),

  // Runs
  createRun: endpoint({
    method: 'post', path: '/environments/:name/runs', service: 'placement', tag: 'Runs', auth: 'api_token', scope: 'runs:write',
    summary: 'Start a run of a job of the active deployment',
    params: EnvironmentPathParams, body: CreateRunRequest, describedBody: z.union([CreateRunForJob, CreateRunForAssets]), headers: [IDEMPOTENCY_HEADER],
    responses: { 201: Run },
    errors: ['not_found', 'environment_deleting', 'no_active_deployment', 'queued_runs_quota_exceeded', 'queued_runs_per_environment_quota_exceeded'],
  }),
  listRuns: endpoint({
    method: 'get', path: '/environments/:name/runs', service: 'placement', tag: 'Runs', auth: 'api_token', scope: 'runs:read',
    summary: 'List the runs of an environment, newest first',
    params: EnvironmentPathParams, query: RunListQuery,
    responses: { 200: z.array(Run) }, errors: ['not_found'],
  }),
  getRun: endpoint({
    method: 'get', path: '/runs/:id', service: 'placement', tag: 'Runs', auth: 'api_token', scope: 'runs:read',
    summary: 'Get a run with its attempts',
    params: RunPathParams, responses: { 200: Run }, errors: ['not_found'],
  }),
  getRunLogs: endpoint({
    method: 'get', path: '/runs/:id/logs', service: 'placement', tag: 'Runs', auth: 'api_token', scope: 'runs:read',
    summary: 'Read the log lines of a run, in order, a page at a time',
    params: RunPathParams, query: RunLogsQuery,
    responses: { 200: z.array(RunLogLine) }, errors: ['not_found'],
  }),
  cancelRun: endpoint({
    method: 'post', path: '/runs/:id/cancel', service: 'placement', tag: 'Runs', auth: 'api_token', scope: 'runs:write',
    summary: 'Cancel a run',
    params: RunPathParams, body: CancelRunRequest, bodyOptional: true, headers: [IDEMPOTENCY_HEADER],
    responses: { 200: Run }, errors: ['not_found', 'run_finished'],
  }),

  // Schedules
  listSchedules: endpoint({
    method: 'get', path: '/environments/:name/schedules', service: 'placement', tag: 'Schedules', auth: 'api_token', scope: 'environments:read',
    summary: 'List the schedules of the active deployment',
    params: EnvironmentPathParams, responses: { 200: z.array(Schedule) }, errors: ['not_found'],
  }),
  nextScheduleFireTimes: endpoint({
    method: 'get', path: '/environments/:name/schedules/:schedule/next', service: 'placement', tag: 'Schedules', auth: 'api_token', scope: 'environments:read',
    summary: 'The next fire times of a schedule',
    params: SchedulePathParams, query: ScheduleNextQuery,
    responses: { 200: ScheduleNextFireTimes }, errors: ['not_found'],
  }),
  pauseSchedules: endpoint({
    method: 'post', path: '/environments/:name/schedules/pause', service: 'placement', tag: 'Schedules', auth: 'api_token', scope: 'schedules:write',
    summary: 'Pause every schedule of an environment',
    params: EnvironmentPathParams, body: ScheduleToggleRequest, bodyOptional: true, headers: [IDEMPOTENCY_HEADER],
    responses: { 200: Environment }, errors: ['not_found', 'environment_deleting'],
  }),
  resumeSchedules: endpoint({
    method: 'post', path: '/environments/:name/schedules/resume', service: 'placement', tag: 'Schedules', auth: 'api_token', scope: 'schedules:write',
    summary: 'Resume the schedules of an environment',
    params: EnvironmentPathParams, body: ScheduleToggleRequest, bodyOptional: true, headers: [IDEMPOTENCY_HEADER],
    responses: { 200: Environment }, errors: ['not_found', 'environment_deleting'],
  }),

  // Worker pools
  getPool: endpoint({
    method: 'get', path: '/pool', service: 'placement', tag: 'Worker pools', auth: 'api_token', scope: 'runs:read', tenantWide: true,
    summary: 'The tenant pool: its queue, live workers, attempts in flight and credentials',
    responses: { 200: PoolStatus }, errors: [],
  }),
  createPoolCredential: endpoint({
    method: 'post', path: '/pool/credentials', service: 'placement', tag: 'Worker pools', auth: 'api_token', scope: 'pool:admin', tenantWide: true,
    summary: 'Issue a pool credential (its token is shown once)',
    body: CreatePoolCredentialRequest, bodyOptional: true, headers: [IDEMPOTENCY_HEADER],
    responses: { 201: PoolCredentialIssued }, errors: ['pool_credentials_quota_exceeded'],
  }),
  revokePoolCredential: endpoint({
    method: 'delete', path: '/pool/credentials/:id', service: 'placement', tag: 'Worker pools', auth: 'api_token', scope: 'pool:admin', tenantWide: true,
    summary: 'Revoke a pool credential',
    params: PoolCredentialPathParams, responses: { 200: PoolCredentialRevoked }, errors: ['not_found'],
  }),

  // Events
  listEvents: endpoint({
    method: 'get', path: '/events', service: 'placement', tag: 'Events', auth: 'api_token', scope: 'events:read',
    summary: "List the tenant's events (its audit log), newest first; with `after`, those after an event, oldest first",
    query: EventListQuery, responses: { 200: z.array(EngineEvent) }, errors: [],
  }),

  // Webhooks
  createWebhook: endpoint({
    method: 'post', path: '/webhooks', service: 'placement', tag: 'Webhooks', auth: 'api_token', scope: 'webhooks:write', tenantWide: true,
    summary: 'Subscribe a URL to events (its signing secret is shown once)',
    description: 'Deliveries follow the Standard Webhooks specification: `webhook-id` (the event id), `webhook-timestamp` and `webhook-signature` (HMAC-SHA256 under the secret). A target on the engine\'s own network (loopback, private, link-local, the engine\'s host) is refused here and at each delivery, on the address its name resolves to then.',
    body: CreateWebhookRequest, headers: [IDEMPOTENCY_HEADER],
    responses: { 201: WebhookCreated }, errors: ['webhook_target_refused', 'webhooks_quota_exceeded'],
  }),
  listWebhooks: endpoint({
    method: 'get', path: '/webhooks', service: 'placement', tag: 'Webhooks', auth: 'api_token', scope: 'events:read', tenantWide: true,
    summary: "List the tenant's webhooks (never their secrets)",
    responses: { 200: z.array(Webhook) }, errors: [],
  }),
  getWebhook: endpoint({
    method: 'get', path: '/webhooks/:id', service: 'placement', tag: 'Webhooks', auth: 'api_token', scope: 'events:read', tenantWide: true,
    summary: 'Get a webhook',
    params: WebhookPathParams, responses: { 200: Webhook }, errors: ['not_found'],
  }),
  updateWebhook: endpoint({
    method: 'patch', path: '/webhooks/:id', service: 'placement', tag: 'Webhooks', auth: 'api_token', scope: 'webhooks:write', tenantWide: true,
    summary: 'Change a webhook: its URL, its events, or enable and disable it',
    params: WebhookPathParams, body: UpdateWebhookRequest,
    responses: { 200: Webhook }, errors: ['not_found', 'webhook_target_refused'],
  }),
  deleteWebhook: endpoint({
    method: 'delete', path: '/webhooks/:id', service: 'placement', tag: 'Webhooks', auth: 'api_token', scope: 'webhooks:write', tenantWide: true,
    summary: 'Delete a webhook (its deliveries not yet sent are skipped)',
    params: WebhookPathParams, responses: { 200: WebhookDeleted }, errors: ['not_found'],
  }),
  rotateWebhookSecret: endpoint({
    method: 'post', path: '/webhooks/:id/secret/rotate', service: 'placement', tag: 'Webhooks', auth: 'api_token', scope: 'webhooks:write', tenantWide: true,
    summary: 'Give a webhook a new signing secret (shown once); deliveries are signed by both until the previous one expires',
    params: WebhookPathParams, responses: { 200: WebhookSecretRotated }, errors: ['not_found'],
  }),
  testWebhook: endpoint({
    method: 'post', path: '/webhooks/:id/test', service: 'placement', tag: 'Webhooks', auth: 'api_token', scope: 'webhooks:write', tenantWide: true,
    summary: 'Send a `webhook.test` event to this webhook alone',
    params: WebhookPathParams, responses: { 202: WebhookTestSent }, errors: ['not_found'],
  }),
  listWebhookDeliveries: endpoint({
    method: 'get', path: '/webhooks/:id/deliveries', service: 'placement', tag: 'Webhooks', auth: 'api_token', scope: 'events:read', tenantWide: true,
    summary: "A webhook's deliveries, newest first, each with its attempts' status and latency",
    params: WebhookPathParams, query: WebhookDeliveryListQuery, responses: { 200: z.array(WebhookDelivery) }, errors: ['not_found'],
  }),

  // API tokens (the gateway's own)
  createToken: endpoint({
    method: 'post', path: '/tokens', service: 'gateway', tag: 'Tokens', auth: 'api_token', scope: 'tokens:admin',
    summary: 'Make an API token of the tenant (shown once), with a role or scopes and optionally limited to environments',
    description:
      'A token makes only tokens within its own scopes and environments, and none that outlives it (403 `insufficient_scope` naming what is beyond them). `environments` takes names and `prefix*` patterns. ' +
      'No Idempotency-Key: the answer holds the token, which is kept only as a hash, so there is nothing to replay (a retry makes a second token; revoke the one you did not get).',
    body: CreateTokenRequest,
    responses: { 201: ApiTokenCreated }, errors: ['tokens_quota_exceeded'],
  }),
  listTokens: endpoint({
    method: 'get', path: '/tokens', service: 'gateway', tag: 'Tokens', auth: 'api_token', scope: 'tokens:admin',
    summary: "List the tenant's live API tokens within the caller's own scopes and environments (never a token)",
    responses: { 200: z.array(ApiToken) }, errors: [],
  }),
  revokeToken: endpoint({
    method: 'delete', path: '/tokens/:id', service: 'gateway', tag: 'Tokens', auth: 'api_token', scope: 'tokens:admin',
    summary: 'Revoke an API token; every gateway refuses it at once',
    description: 'Only a token within the caller\'s own scopes and environments (another is 404, as is one revoked before).',
    params: ApiTokenPathParams, responses: { 200: ApiTokenRevoked }, errors: ['not_found'],
  }),

  // The worker API (pool tokens)
  workerHeartbeat: endpoint({
    method: 'post', path: '/worker/heartbeat', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'A worker reports itself and the attempts it runs; the answer names those it should stop',
    body: WorkerHeartbeatRequest, responses: { 200: WorkerHeartbeatResponse }, errors: [],
  }),
  startAttempt: endpoint({
    method: 'post', path: '/worker/attempts/:id/start', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Claim a queued attempt: the answer carries its lease and plan',
    params: WorkerAttemptParams, body: StartAttemptRequest,
    responses: { 200: AttemptStarted }, errors: ['not_found', 'lease_superseded'],
  }),
  appendAttemptLogs: endpoint({
    method: 'post', path: '/worker/attempts/:id/logs', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Append log lines of an attempt',
    params: WorkerAttemptParams, body: AppendLogsRequest, headers: [LEASE_HEADER],
    responses: { 200: z.object({ stored: z.number().int().nonnegative() }) }, errors: ['not_found', 'lease_superseded'],
  }),
  attemptUpstream: endpoint({
    method: 'get', path: '/worker/attempts/:id/upstreams/:key', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Where the latest materialization of an upstream asset is (one the reading asset declares in its deps)',
    params: WorkerAssetParams, query: UpstreamQuery, headers: [LEASE_HEADER],
    responses: { 200: UpstreamLocation }, errors: ['not_found', 'lease_superseded'],
  }),
  attemptConnection: endpoint({
    method: 'post', path: '/worker/attempts/:id/connections/:name', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Resolve a binding that an asset of the attempt declares',
    params: WorkerConnectionParams, body: ConnectionRequest, headers: [LEASE_HEADER],
    responses: { 200: ResolvedConnection }, errors: ['not_found', 'lease_superseded', 'unknown_secret'],
  }),
  attemptStorage: endpoint({
    method: 'post', path: '/worker/attempts/:id/storage', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Short-lived storage access for one asset of the attempt',
    params: WorkerAttemptParams, body: StorageRequest, headers: [LEASE_HEADER],
    responses: { 200: StorageConnection }, errors: ['not_found', 'lease_superseded'],
  }),
  recordMaterialization: endpoint({
    method: 'post', path: '/worker/attempts/:id/assets/:key/materializations', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Record a materialization that the attempt wrote',
    params: WorkerAssetParams, body: MaterializationWritten, headers: [LEASE_HEADER],
    responses: { 201: Materialization }, errors: ['not_found', 'lease_superseded', 'materialization_bytes_quota_exceeded'],
  }),
  finishAttempt: endpoint({
    method: 'post', path: '/worker/attempts/:id/finish', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Report the outcome of an attempt',
    params: WorkerAttemptParams, body: FinishAttemptRequest, headers: [LEASE_HEADER],
    responses: { 200: Attempt }, errors: ['not_found', 'lease_superseded'],
  }),
  releaseAttempt: endpoint({
    method: 'post', path: '/worker/attempts/:id/release', service: 'placement', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Give an unfinished attempt back to the queue (a draining worker)',
    params: WorkerAttemptParams, body: ReleaseAttemptRequest, bodyOptional: true, headers: [LEASE_HEADER],
    responses: { 200: Attempt }, errors: ['not_found', 'lease_superseded'],
  }),
  downloadBundle: endpoint({
    method: 'get', path: '/worker/bundles/:ref', service: 'deployment', tag: 'Worker API', auth: 'pool_token', scope: null,
    summary: 'Download a bundle by its digest (tar.gz)',
    params: BundlePathParams, responses: { 200: 'application/gzip' }, errors: ['not_found'],
  }),

  // Deployments
  uploadBundle: endpoint({
    method: 'post', path: '/bundles', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'deployments:write',
    summary: 'Upload a bundle (tar.gz); it is stored by its digest',
    description: '201 when stored now, 200 when the same bytes were stored before.',
    body: 'application/gzip',
    responses: { 200: BundleUploaded, 201: BundleUploaded }, errors: ['bundle_bytes_quota_exceeded'],
  }),
  bundleExists: endpoint({
    method: 'head', path: '/bundles/:ref', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'deployments:write',
    summary: 'Whether a bundle is stored (200) or not (404), without a body',
    params: BundlePathParams, responses: { 200: 'empty' }, errors: ['not_found'],
  }),
  createDeployment: endpoint({
    method: 'post', path: '/environments/:name/deployments', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'deployments:write',
    summary: 'Deploy a manifest: ingest it, and activate it unless asked not to',
    description:
      '201 with the ready deployment; 422 with the failed deployment and its validation; 202 with a pending one when the ingest outlasts the wait (poll GET /deployments/{id}).',
    params: EnvironmentPathParams, body: z.unknown(), describedBody: CreateDeploymentRequest, headers: [IDEMPOTENCY_HEADER],
    responses: { 201: Deployment, 202: DeploymentPending, 422: Deployment }, errors: ['not_found', 'environment_deleting'],
  }),
  listDeployments: endpoint({
    method: 'get', path: '/environments/:name/deployments', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'environments:read',
    summary: 'List the deployments of an environment, newest first',
    params: EnvironmentPathParams, query: DeploymentListQuery,
    responses: { 200: z.array(Deployment) }, errors: ['not_found'],
  }),
  getDeployment: endpoint({
    method: 'get', path: '/deployments/:id', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'environments:read',
    summary: 'Get a deployment',
    params: DeploymentPathParams, responses: { 200: z.union([Deployment, DeploymentPending]) }, errors: ['not_found'],
  }),
  activateDeployment: endpoint({
    method: 'post', path: '/deployments/:id/activate', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'deployments:write',
    summary: 'Make a ready deployment the active one of its environment (also a rollback)',
    params: DeploymentPathParams, body: ActivateRequest, bodyOptional: true, headers: [IDEMPOTENCY_HEADER],
    responses: { 200: Deployment }, errors: ['not_found', 'deployment_not_ready', 'environment_deleting'],
  }),
  promoteDeployment: endpoint({
    method: 'post', path: '/deployments/:id/promote', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'deployments:write',
    summary: 'Deploy the same manifest, bundle, git and sdk_version to another environment',
    description:
      'A new deployment of `environment` with `promoted_from` naming the source, validated by that environment\'s ingest rules: 201 ready or 422 failed as an ingest answers. The source must be ready (409 `deployment_not_ready`).',
    params: DeploymentPathParams, body: PromoteRequest, headers: [IDEMPOTENCY_HEADER],
    responses: { 201: Deployment, 202: DeploymentPending, 422: Deployment }, errors: ['not_found', 'deployment_not_ready', 'environment_deleting'],
  }),
  diffDeployment: endpoint({
    method: 'get', path: '/deployments/:id/diff', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'environments:read',
    summary: 'What changed between two deployments: assets and their columns, jobs, schedules and bundle files',
    description: '`base` defaults to the deployment active in its environment before this one, else the active one; with neither, `base_id` is null and everything is added.',
    params: DeploymentPathParams, query: DeploymentDiffQuery,
    responses: { 200: DeploymentDiff }, errors: ['not_found', 'deployment_not_ready'],
  }),
  listAssets: endpoint({
    method: 'get', path: '/environments/:name/assets', service: 'deployment', tag: 'Deployments', auth: 'api_token', scope: 'environments:read',
    summary: 'The assets of the active deployment, each with its latest materialization',
    params: EnvironmentPathParams, responses: { 200: z.array(AssetListing) }, errors: ['not_found'],
  }),

  listMaterializations: endpoint({
    method: 'get', path: '/environments/:name/assets/:key/materializations', service: 'deployment', tag: 'Outputs', auth: 'api_token', scope: 'environments:read',
    summary: 'The materializations of an asset, newest first',
    description: 'Paged: pass the id of the last one as `before` for the next page. An asset the active deployment does not declare and that has no materializations is 404.',
    params: AssetPathParams, query: MaterializationListQuery,
    responses: { 200: z.array(Materialization) }, errors: ['not_found'],
  }),
  downloadMaterialization: endpoint({
    method: 'get', path: '/environments/:name/assets/:key/materializations/:id/data', service: 'placement', tag: 'Outputs', auth: 'api_token', scope: 'environments:read',
    summary: 'The Parquet bytes of a materialization, streamed (Range supported)',
    description:
      'For `file://` prefixes and the engine\'s own object store. One byte range (`Range: bytes=a-b`, `a-` or `-n`) answers 206 with `Content-Range`; a range past the end is 416. A file in a store of the tenant\'s own (a binding with an endpoint) is 409 `materialization_unreachable`: it is read there, with the tenant\'s keys.',
    params: AssetMaterializationPathParams,
    headers: [{ name: 'Range', required: false, description: 'One byte range: `bytes=0-1023`, `bytes=1024-` or `bytes=-512`.' }],
    responses: { 200: PARQUET_MEDIA_TYPE, 206: PARQUET_MEDIA_TYPE }, errors: ['not_found', 'materialization_unreachable', 'range_not_satisfiable'],
  }),
  previewMaterialization: endpoint({
    method: 'get', path: '/environments/:name/assets/:key/materializations/:id/preview', service: 'placement', tag: 'Outputs', auth: 'api_token', scope: 'environments:read',
    summary: 'The first rows of a materialization, as JSON',
    description: 'Rows as `ctx.read` gives them; integers past 2^53 as decimal strings. Only the row groups that hold the rows shown are read.',
    params: AssetMaterializationPathParams, query: MaterializationPreviewQuery,
    responses: { 200: MaterializationPreview }, errors: ['not_found', 'materialization_unreachable'],
  }),

  // Secrets and bindings
  listSecrets: endpoint({
    method: 'get', path: '/environments/:name/secrets', service: 'secrets', tag: 'Secrets', auth: 'api_token', scope: 'environments:read',
    summary: 'List the secrets of an environment (never their values)',
    params: EnvironmentPathParams, responses: { 200: z.array(SecretRow) }, errors: ['not_found'],
  }),
  putSecret: endpoint({
    method: 'put', path: '/environments/:name/secrets/:secret', service: 'secrets', tag: 'Secrets', auth: 'api_token', scope: 'secrets:write',
    summary: 'Create a secret (201) or give it a new version (200)',
    params: SecretPathParams, body: PutSecretRequest,
    responses: { 200: SecretRow, 201: SecretRow }, errors: ['not_found', 'environment_deleting', 'secrets_per_environment_quota_exceeded'],
  }),
  deleteSecret: endpoint({
    method: 'delete', path: '/environments/:name/secrets/:secret', service: 'secrets', tag: 'Secrets', auth: 'api_token', scope: 'secrets:write',
    summary: 'Delete a secret',
    params: SecretPathParams, responses: { 200: DeletedResource }, errors: ['not_found', 'environment_deleting'],
  }),
  listBindings: endpoint({
    method: 'get', path: '/environments/:name/bindings', service: 'secrets', tag: 'Bindings', auth: 'api_token', scope: 'environments:read',
    summary: 'List the bindings of an environment',
    params: EnvironmentPathParams, responses: { 200: z.array(Binding) }, errors: ['not_found'],
  }),
  putBinding: endpoint({
    method: 'put', path: '/environments/:name/bindings/:connection', service: 'secrets', tag: 'Bindings', auth: 'api_token', scope: 'bindings:write',
    summary: 'Create (201) or replace (200) the binding of a named connection',
    params: BindingPathParams, body: PutBindingRequest, bodyOptional: true,
    responses: { 200: Binding, 201: Binding }, errors: ['not_found', 'environment_deleting', 'unknown_secret'],
  }),
  deleteBinding: endpoint({
    method: 'delete', path: '/environments/:name/bindings/:connection', service: 'secrets', tag: 'Bindings', auth: 'api_token', scope: 'bindings:write',
    summary: 'Delete a binding',
    params: BindingPathParams, responses: { 200: DeletedResource }, errors: ['not_found', 'environment_deleting'],
  }),
} as const satisfies Record<string, Endpoint>;

export type PublicApi = typeof PublicApi;
export type OperationId = keyof PublicApi;
