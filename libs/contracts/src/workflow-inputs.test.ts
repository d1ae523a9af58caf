import { describe, expect, it } from 'vitest';
import { ActivateInput, IngestInput, ScheduledRunInput } from './workflow-inputs.ts';

const scope = { tenantId: 'ten_01m813w5p0mba0fr1w8mf0qssv', environmentId: 'env_01m813w5p0mba0fr1w8mf0qssv', environmentName: 'prod' };
const ingest = {
  ...scope,
  deploymentId: 'dep_01m813w5p0mba0fr1w8mf0qssv',
  strict: false,
  activeDeploymentId: null,
  bundleRef: 'sha256:abc',
  git: { branch: 'main', sha: 'local' },
  sdkVersion: null,
  activate: true,
  allowContractChanges: [],
  createdBy: null,
  fieldErrors: [],
};

describe('workflow inputs', () => {
  it('take ids and small values', () => {
    expect(IngestInput.parse(ingest)).toEqual(ingest);
    expect(ActivateInput.parse({ ...scope, deploymentId: ingest.deploymentId })).toEqual({ ...scope, deploymentId: ingest.deploymentId });
  });

  it('refuse a document carried along, or an id of the wrong kind', () => {
    expect(() => IngestInput.parse({ ...ingest, manifest: { version: 1, assets: [] } })).toThrow();
    expect(() => ActivateInput.parse({ ...scope, deploymentId: scope.environmentId })).toThrow(/must be a dep_ id/);
    expect(() => ScheduledRunInput.parse({ ...scope, schedule: 'nightly', job: 'all', cron: '', timezone: 'UTC' })).toThrow();
  });
});
