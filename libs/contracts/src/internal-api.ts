import { z } from 'zod';
import { BindingModes, BindingModesParams, BindingModesQuery, RESOLVER_CALLER_HEADER, RESOLVER_CALLER_PATTERN, ResolveBindingRequest, ResolvedBinding } from './bindings.ts';
import {
  AssetMaterializationParams,
  DeploymentPathParams,
  DeploymentRunSpec,
  LatestMaterializationParams,
  Materialization,
  MaterializationPathParams,
  MaterializationRetracted,
  RecordMaterializationRequest,
  RetractMaterializationRequest,
  SetActiveDeploymentRequest,
} from './deployments.ts';
import {
  Environment,
  EnvironmentIdParams,
  EnvironmentPathParams,
  EnvironmentRemoved,
  ExpireEnvironmentResult,
  ExpiryNoticeRequest,
  ExpiryNoticeResult,
  PurgeFilesRequest,
  PurgeFilesResult,
  TeardownStepReport,
} from './environment.ts';
import { PublishEventsRequest, PublishEventsResult } from './events.ts';
import { PoolTokenHashParams, PoolTokenOwner } from './pool.ts';
import type { ApiService, RequestHeader } from './public-api.ts';
import { DeploymentQuotas, SecretsQuotas } from './quotas.ts';
import { INTERNAL_API_BASE, type RouteContract } from './route-contract.ts';
import { ReconcileSchedulesRequest, ReconcileSchedulesResult, ScheduleTickParams, SchedulesRemoved, TickShardResult } from './schedules.ts';

/**
 * Which credential opens a route: `internal`, the one the gateway and the services share;
 * `resolver`, held only by the attempt runner and workers (it opens secret values).
 */
export type InternalApiCredential = 'internal' | 'resolver';

/**
 * One route of `/internal/v1`: what one service asks of another (or the engine's own
 * workers of it), never forwarded by the gateway. The services mount their handlers from
 * these and `@envengine/service-clients` calls them through `requestRoute`.
 */
export interface InternalRoute extends RouteContract {
  readonly base: typeof INTERNAL_API_BASE;
  readonly service: ApiService;
  readonly credential: InternalApiCredential;
  readonly summary: string;
  /** Internal routes take JSON bodies only. */
  readonly body?: z.ZodType;
  readonly headers?: readonly RequestHeader[];
}

function internalEndpoint<const R extends Omit<InternalRoute, 'base'>>(definition: R): R & { readonly base: typeof INTERNAL_API_BASE } {
  return { ...definition, base: INTERNAL_API_BASE };
}

const CALLER_HEADER: RequestHeader = {
  name: RESOLVER_CALLER_HEADER,
  required: true,
  description: 'The calling process (1-200 printable characters, the first not a space), recorded in the audit log.',
  pattern: RESOLVER_CALLER_PATTERN,
};

/** Every route of `/internal/v1`, by operation id. */
export const InternalApi = {
  // The placement-service: environments for the deployment scope and the lifecycle workflows
  setActiveDeployment: internalEndpoint({
    method: 'post', path: '/environments/:name/active-deployment', service: 'placement', credential: 'internal',
    summary: "Point an environment at a deployment (activation's last step)",
    params: EnvironmentPathParams, body: SetActiveDeploymentRequest, responses: { 200: Environment },
  }),
  extendEnvironmentTtl: internalEndpoint({
    method: 'post', path: '/environments/:name/ttl-extension', service: 'placement', credential: 'internal',
    summary: "A deploy arrived: a preview's expiry moves to its TTL from now",
    params: EnvironmentPathParams, responses: { 200: Environment },
  }),
  expireEnvironment: internalEndpoint({
    method: 'post', path: '/environments/:id/expire', service: 'placement', credential: 'internal',
    summary: 'The expiry timer fired: the tear-down begins unless a deploy moved the expiry',
    params: EnvironmentIdParams, responses: { 200: ExpireEnvironmentResult },
  }),
  noticeEnvironmentExpiry: internalEndpoint({
    method: 'post', path: '/environments/:id/expiry-notice', service: 'placement', credential: 'internal',
    summary: "The expiry timer's notice: records environment.expiring once for the instant it was armed for, if that is still the expiry",
    params: EnvironmentIdParams, body: ExpiryNoticeRequest, responses: { 200: ExpiryNoticeResult },
  }),
  removeEnvironmentRuns: internalEndpoint({
    method: 'post', path: '/environments/:id/teardown/runs', service: 'placement', credential: 'internal',
    summary: "A tear-down step: the environment's runs canceled and removed",
    params: EnvironmentIdParams, responses: { 200: TeardownStepReport },
  }),
  purgeEnvironmentFiles: internalEndpoint({
    method: 'post', path: '/environments/:id/teardown/files', service: 'placement', credential: 'internal',
    summary: "A tear-down step: a page of the environment's materialization files removed",
    params: EnvironmentIdParams, body: PurgeFilesRequest, responses: { 200: PurgeFilesResult },
  }),
  removeEnvironment: internalEndpoint({
    method: 'delete', path: '/environments/:id', service: 'placement', credential: 'internal',
    summary: "The tear-down's last step: the environment's document removed",
    params: EnvironmentIdParams, responses: { 200: EnvironmentRemoved },
  }),
  reconcileSchedules: internalEndpoint({
    method: 'put', path: '/environments/:id/schedules', service: 'placement', credential: 'internal',
    summary: "An activation: the environment's stored schedules become its deployment's",
    params: EnvironmentIdParams, body: ReconcileSchedulesRequest, responses: { 200: ReconcileSchedulesResult },
  }),
  removeSchedules: internalEndpoint({
    method: 'delete', path: '/environments/:id/schedules', service: 'placement', credential: 'internal',
    summary: "A tear-down step: the environment's stored schedules removed",
    params: EnvironmentIdParams, responses: { 200: SchedulesRemoved },
  }),
  tickSchedules: internalEndpoint({
    method: 'post', path: '/schedule-ticks/:shard', service: 'placement', credential: 'internal',
    summary: "A tick loop's pass: the shard's due schedules ticked (engine-wide, under the engine's own id)",
    params: ScheduleTickParams, responses: { 200: TickShardResult },
  }),
  poolTokenOwner: internalEndpoint({
    method: 'get', path: '/pool/tokens/:hash', service: 'placement', credential: 'internal',
    summary: "The gateway's lookup of a pool token by its hash: the tenant and credential it belongs to",
    params: PoolTokenHashParams, responses: { 200: PoolTokenOwner },
  }),

  publishEvents: internalEndpoint({
    method: 'post', path: '/events', service: 'placement', credential: 'internal',
    summary: "A scope's outbox relay: a batch of its events into the audit log (stored once per id, however often sent)",
    body: PublishEventsRequest, responses: { 200: PublishEventsResult },
  }),

  // The deployment-service: runs' deployments and attempts' materializations, for the placement-service
  deploymentQuotas: internalEndpoint({
    method: 'get', path: '/quotas', service: 'deployment', credential: 'internal',
    summary: "The tenant's stored-bundle and stored-materialization quotas, their limits and use (a part of GET /quotas)",
    responses: { 200: DeploymentQuotas },
  }),
  recordMaterialization: internalEndpoint({
    method: 'post', path: '/materializations', service: 'deployment', credential: 'internal',
    summary: 'Record a materialization an attempt wrote',
    body: RecordMaterializationRequest, responses: { 201: Materialization },
  }),
  retractMaterialization: internalEndpoint({
    method: 'post', path: '/materializations/:id/retract', service: 'deployment', credential: 'internal',
    summary: "Take back a materialization an attempt recorded (its lease was superseded)",
    params: MaterializationPathParams, body: RetractMaterializationRequest, responses: { 200: MaterializationRetracted },
  }),
  latestUsableMaterialization: internalEndpoint({
    method: 'get', path: '/environments/:environmentId/assets/:key/latest-usable', service: 'deployment', credential: 'internal',
    summary: "`ctx.read(key)`: the asset's newest materialization that is not quarantined, or null",
    params: LatestMaterializationParams, responses: { 200: Materialization.nullable() },
  }),
  materializationOfAsset: internalEndpoint({
    method: 'get', path: '/environments/:environmentId/assets/:key/materializations/:id', service: 'deployment', credential: 'internal',
    summary: "One materialization of an environment's asset (to read its file)",
    params: AssetMaterializationParams, responses: { 200: Materialization },
  }),
  deploymentRunSpec: internalEndpoint({
    method: 'get', path: '/deployments/:id/run-spec', service: 'deployment', credential: 'internal',
    summary: 'The deployment a run executes against, with its validated manifest',
    params: DeploymentPathParams, responses: { 200: DeploymentRunSpec },
  }),

  // The secrets-service: its part of quotas and tear-downs, and secret resolution for the runners
  secretsQuotas: internalEndpoint({
    method: 'get', path: '/quotas', service: 'secrets', credential: 'internal',
    summary: "The tenant's secrets quota, its limit and use (a part of GET /quotas)",
    responses: { 200: SecretsQuotas },
  }),
  retireEnvironmentSecrets: internalEndpoint({
    method: 'delete', path: '/lifecycle/environments/:id', service: 'secrets', credential: 'internal',
    summary: "A tear-down step: the environment's secrets retired in their backend, its bindings and audit rows deleted",
    params: EnvironmentIdParams, responses: { 200: TeardownStepReport },
  }),
  bindingModes: internalEndpoint({
    method: 'get', path: '/environments/:id/binding-modes', service: 'secrets', credential: 'resolver',
    summary: "An attempt's plan: the mode of each binding of an environment, by its id",
    params: BindingModesParams, query: BindingModesQuery, responses: { 200: BindingModes },
  }),
  resolveBinding: internalEndpoint({
    method: 'post', path: '/bindings/resolve', service: 'secrets', credential: 'resolver',
    summary: "A binding's settings with its secrets' values, audited under the caller",
    body: ResolveBindingRequest, headers: [CALLER_HEADER], responses: { 200: ResolvedBinding },
  }),
} as const satisfies Record<string, InternalRoute>;

export type InternalApi = typeof InternalApi;
export type InternalOperationId = keyof InternalApi;
