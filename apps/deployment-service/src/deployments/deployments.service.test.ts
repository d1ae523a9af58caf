import { describe, expect, it } from 'vitest';
import type { Environment } from '@envengine/contracts';
import type { DeploymentRepository } from '@envengine/deployment-data';
import type { PlacementClient } from '@envengine/service-clients';
import type { IngestMetrics } from '@envengine/service-metrics';
import { ApiError } from '@envengine/service-kit';
import { DeploymentsService, workflowCauseOf } from './deployments.service.ts';
import type { WorkflowStarter } from './workflow-starter.ts';

const active = { id: 'env_1', name: 'prod', status: 'active', strict: false, active_deployment_id: null } as unknown as Environment;
const cause = { actor: 'tok_1', requestId: 'req_1' };
const body = { manifest: { version: 1, assets: [], jobs: [], schedules: [] }, bundle_ref: `sha256:${'a'.repeat(64)}` };

/** The service over stand-ins: the environment as placement answers it before and after the ingest, and an ingest workflow that failed. */
function serviceWhere(after: Environment | undefined): DeploymentsService {
  const placement = {
    extendTtl: async () => active,
    findEnvironment: async () => after,
  } as unknown as PlacementClient;
  const deployments = { storeManifest: async () => undefined, find: async () => null } as unknown as DeploymentRepository;
  const workflows = { ingest: async () => Promise.reject(new Error('workflow for dep_x failed: no manifest stored for dep_x')) } as unknown as WorkflowStarter;
  const metrics = { ingestDuration: { observe: () => undefined } } as unknown as IngestMetrics;
  return new DeploymentsService(deployments, placement, workflows, metrics);
}

// Found by the soak (docs/reliability.md): a DELETE that lands mid-ingest removes the stored
// manifest, the workflow fails on it, and the ingest answered 500.
describe('an ingest whose environment is deleted meanwhile', () => {
  it('answers 409 environment_deleting when the environment is being deleted', async () => {
    const refused = await serviceWhere({ ...active, status: 'deleting' } as Environment).ingest('ten_1', 'prod', body, 'req_1', cause).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ code: 'environment_deleting', message: expect.stringMatching(/was deleted while this deployment was ingested or activated; nothing was deployed/) });
  });

  it('answers 409 environment_deleting when the environment is gone, or another of its name was made', async () => {
    for (const after of [undefined, { ...active, id: 'env_2' } as Environment]) {
      expect(await serviceWhere(after).ingest('ten_1', 'prod', body, 'req_1', cause).catch((error: unknown) => error)).toMatchObject({ code: 'environment_deleting' });
    }
  });

  it('keeps the failure as it is when the environment is still there', async () => {
    const failed = await serviceWhere(active).ingest('ten_1', 'prod', body, 'req_1', cause).catch((error: unknown) => error);
    expect(failed).not.toBeInstanceOf(ApiError);
    expect((failed as Error).message).toMatch(/no manifest stored/);
  });

  it('answers 409 environment_deleting to an activation (a rollback) whose environment began its tear-down meanwhile', async () => {
    const ready = { _id: 'dep_1', status: 'ready', environment_id: 'env_1', environment_name: 'prod' };
    const answers = [active, { ...active, status: 'deleting' }];
    const placement = { findEnvironment: async () => answers.shift() } as unknown as PlacementClient;
    const deployments = { find: async () => ready } as unknown as DeploymentRepository;
    const workflows = { activate: async () => Promise.reject(new Error('workflow for dep_1 failed: environment prod is being deleted or is gone')) } as unknown as WorkflowStarter;
    const service = new DeploymentsService(deployments, placement, workflows, { ingestDuration: { observe: () => undefined } } as unknown as IngestMetrics);
    expect(await service.activate('ten_1', 'dep_1', cause).catch((error: unknown) => error)).toMatchObject({ code: 'environment_deleting' });
  });
});

describe('the cause a workflow carries to its events', () => {
  it('names the request\'s token and request id', () => {
    expect(workflowCauseOf({ actor: 'tok_abc123', requestId: 'req_9' })).toEqual({ cause: { actor: 'tok_abc123', request_id: 'req_9' } });
  });

  it('is left out (the events name the engine) for an actor no event can name', () => {
    expect(workflowCauseOf({ actor: 'someone else', requestId: 'req_9' })).toEqual({});
  });

  it('goes into the ingest workflow\'s input', async () => {
    const started: unknown[] = [];
    const placement = { extendTtl: async () => active, findEnvironment: async () => active } as unknown as PlacementClient;
    const deployments = { storeManifest: async () => undefined, find: async () => undefined } as unknown as DeploymentRepository;
    const workflows = {
      ingest: async (input: unknown) => {
        started.push(input);
        throw new Error('stop here');
      },
    } as unknown as WorkflowStarter;
    const service = new DeploymentsService(deployments, placement, workflows, { ingestDuration: { observe: () => undefined } } as unknown as IngestMetrics);
    await service.ingest('ten_1', 'prod', body, 'req_1', { actor: 'tok_abc', requestId: 'req_1' }).catch(() => undefined);
    expect(started).toEqual([expect.objectContaining({ cause: { actor: 'tok_abc', request_id: 'req_1' } })]);
  });
});
