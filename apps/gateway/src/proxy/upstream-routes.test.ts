import { describe, expect, it } from 'vitest';
import { upstreamFor } from './upstream-routes.ts';

describe('upstreamFor', () => {
  it.each([
    ['/environments', 'placement'],
    ['/environments/prod', 'placement'],
    ['/environments/prod/placement', 'placement'],
    ['/environments/prod/schedules/pause', 'placement'],
    ['/environments/prod/runs', 'placement'],
    ['/placement', 'placement'],
    ['/runs/run_1/cancel', 'placement'],
    ['/environments/prod/bindings/warehouse', 'secrets'],
    ['/environments/prod/secrets', 'secrets'],
    ['/environments/prod/deployments', 'deployment'],
    ['/environments/prod/assets', 'deployment'],
    ['/deployments/dep_1/activate', 'deployment'],
    ['/bundles', 'deployment'],
    ['/pool', 'placement'],
    ['/pool/credentials/pcr_1', 'placement'],
    ['/worker/attempts/att_1/start', 'placement'],
    ['/worker/heartbeat', 'placement'],
    ['/worker/bundles/sha256:ab', 'deployment'],
  ])('%s goes to %s', (path, upstream) => {
    expect(upstreamFor(path)).toBe(upstream);
  });

  it.each(['/', '/environmentsx', '/tokens', '/environments-prod', '/workers', '/poolx'])('%s has no owner', (path) => {
    expect(upstreamFor(path)).toBeUndefined();
  });
});
