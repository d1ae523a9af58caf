import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Environment, ErrorBody, Run } from '@envengine/contracts';
import { createTenant, deployProject, startOutsideHost, type OutsideHost, type TestTenant } from '@envengine/test-harness';
import { engineTargets, probeAsset, waitForRun, type ProbeTarget } from './runs-fixtures.ts';

const stack = inject('stack');

/**
 * An environment's egress (docs/design.md#the-network), on the engine's runner: `none`
 * reaches nothing; `public` reaches a host outside the engine (a server in a network
 * namespace this test makes, at a TEST-NET-3 address), and still no server of the engine
 * host, no private range and no link-local address.
 */
const manifest = {
  version: 1,
  assets: [{ key: 'probe', binding: 'net', entry: 'assets/probe.js', deps: [], schema: { columns: [{ name: 'report', type: 'string' }] } }],
  jobs: [],
  schedules: [],
};

describe('egress of an environment', () => {
  let tenant: TestTenant;
  let outside: OutsideHost;
  let targets: ProbeTarget[];

  beforeAll(async () => {
    outside = await startOutsideHost(join(stack.dataDir, 'logs', 'outside-host.log'));
    // The outside host's own veth address on this side is an address of the engine host.
    const hostSide = outside.address.replace(/\d+$/, (last) => String(Number(last) - 1));
    targets = [
      { name: 'outside', host: outside.address, port: outside.port },
      ...engineTargets(stack),
      { name: 'engine-host-veth', host: hostSide, port: Number(new URL(stack.gatewayUrl).port) },
      // slirp4netns's gateway, which would be the host's loopback without --disable-host-loopback.
      { name: 'slirp-gateway', host: '10.0.2.2', port: Number(new URL(stack.gatewayUrl).port) },
      { name: 'private-10', host: '10.1.2.3', port: 80 },
      { name: 'private-192', host: '192.168.1.1', port: 80 },
      { name: 'private-172', host: '172.16.0.1', port: 80 },
      { name: 'cloud-metadata', host: '169.254.169.254', port: 80 },
    ];
    tenant = await createTenant(stack, 'egress');
    await deployProject(tenant.api, {
      environment: 'prod',
      storagePrefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId, 'prod')}`,
      executor: 'local',
      bindings: { net: { config: { targets } } },
      files: { 'assets/probe.js': probeAsset('net') },
      manifest,
    });
  });

  afterAll(async () => {
    await outside?.stop();
  });

  async function probe(): Promise<Record<string, string>> {
    const started = await tenant.api.post('/environments/prod/runs', { assets: ['probe'] });
    expect(started.status).toBe(201);
    const finished = await waitForRun(tenant, Run.parse(started.body.data).id, 60_000);
    expect(finished.status, finished.attempts[0]?.error ?? '').toBe('succeeded');
    const logs = (await tenant.api.get(`/runs/${finished.id}/logs`)).body.data as { message: string }[];
    return JSON.parse(logs.find((line) => line.message.startsWith('{'))!.message) as Record<string, string>;
  }

  /** Refused by the sandbox's network (its routes and namespace): what public egress meets. */
  const REFUSED = /^(ECONNREFUSED|ENETUNREACH|EHOSTUNREACH)$/;
  /** Without egress, Node's permission model refuses first (Node 26; the namespace lies beneath it, asset-runner.test proves each layer alone). */
  const DENIED = 'ERR_ACCESS_DENIED';

  it('reaches nothing with egress none (the default), not even the outside host', async () => {
    const environment = Environment.parse((await tenant.api.get('/environments/prod')).body.data);
    expect(environment.egress).toBe('none');
    const report = await probe();
    for (const target of targets) expect([target.name, report[target.name]]).toEqual([target.name, DENIED]);
  });

  it('reaches the outside host with egress public, set by PATCH, and still nothing of the engine host, private or link-local', async () => {
    const patched = await tenant.api.patch('/environments/prod', { egress: 'public' });
    expect(patched.status).toBe(200);
    expect(Environment.parse(patched.body.data).egress).toBe('public');
    const report = await probe();
    expect(report['outside']).toBe('answered outside');
    for (const target of targets.filter((entry) => entry.name !== 'outside')) {
      expect([target.name, report[target.name]]).toEqual([target.name, expect.stringMatching(REFUSED)]);
    }
    // And back: a change applies to the next attempt.
    expect((await tenant.api.patch('/environments/prod', { egress: 'none' })).status).toBe(200);
    expect((await probe())['outside']).toBe(DENIED);
  });

  it('takes egress at create, and refuses bad PATCH bodies and another tenant', async () => {
    const created = await tenant.api.post('/environments', {
      name: 'open',
      storage_prefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId, 'open')}`,
      executor: 'local',
      egress: 'public',
    });
    expect([created.status, created.body.data.egress]).toEqual([201, 'public']);
    const before = (await tenant.api.get('/environments/open')).body.data;
    for (const [body, path] of [
      [{ egress: 'everything' }, 'egress'],
      [{ egress: 'public', name: 'renamed' }, 'name'],
      [{ id: 'env_x' }, 'id'],
      [{ kind: 'preview' }, 'kind'],
      [{ schedules_paused: true }, 'schedules_paused'],
      [{ active_deployment_id: null }, 'active_deployment_id'],
      [{ strict: 'yes' }, 'strict'],
      [{}, ''],
    ] as const) {
      const refused = await tenant.api.patch('/environments/open', body);
      expect([JSON.stringify(body), refused.status]).toEqual([JSON.stringify(body), 422]);
      const { error } = ErrorBody.parse(refused.body);
      expect(error.code).toBe('invalid_request');
      if (path !== '') expect(error.details.map((detail) => detail.path)).toContain(path);
    }
    expect((await tenant.api.get('/environments/open')).body.data).toEqual(before);
    const other = await createTenant(stack, 'egress-other');
    const foreign = await other.api.patch('/environments/open', { egress: 'none' });
    expect([foreign.status, ErrorBody.parse(foreign.body).error.code]).toEqual([404, 'not_found']);
    expect((await tenant.api.get('/environments/open')).body.data).toEqual(before);
    const missing = await tenant.api.patch('/environments/nowhere', { strict: true });
    expect(missing.status).toBe(404);
  });
});
