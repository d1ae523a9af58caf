import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EngineEvent, type Recheck } from '@envengine/contracts';
import { BundleRepository, DeploymentRepository, MaterializationRepository, type DeploymentRecord } from '@envengine/deployment-data';
import { ENGINE_CAUSE, EventOutbox } from '@envengine/event-log';
import { createTenant, makeBundle, manifestOf, recordMaterialization, until, type ApiClient, type ApiResponse, type TestTenant } from '@envengine/test-harness';

import { allEvents } from './events-fixtures.ts';

const stack = inject('stack');

const SCOPE_TYPES = ['deployment.ready', 'deployment.failed', 'deployment.activated', 'materialization.quarantined'];

/** The deployment scope's events of the environment, once `done` holds of them (the relays' lag). */
async function scopeEventsWhen(api: ApiClient, environment: string, done: (events: EngineEvent[]) => boolean): Promise<EngineEvent[]> {
  const read = async () => (await allEvents(api, `&environment=${environment}`)).filter((event) => SCOPE_TYPES.includes(event.type));
  return until(read, done, 30_000, 50);
}

const requestIdOf = (response: ApiResponse) => response.headers.get('x-request-id');

describe('events of the deployment scope: ingests, activations and quarantines, in the audit log', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let bundleRef: string;
  let environmentId: string;
  const env = 'evdeploy';
  const v1 = [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'number', nullable: true }];
  const v2 = [{ name: 'id', type: 'string' }, { name: 'amount', type: 'number', nullable: true }];

  beforeAll(async () => {
    tenant = await createTenant(stack, 'events-deploy');
    other = await createTenant(stack, 'events-deploy-other');
    const lake = join(stack.dataDir, 'lake', tenant.tenantId);
    const created = await tenant.api.post('/environments', { name: env, storage_prefix: `file://${lake}`, executor: 'local' });
    expect(created.status, created.text).toBe(201);
    environmentId = created.body.data.id;
    expect((await tenant.api.put(`/environments/${env}/bindings/warehouse`, {})).status).toBeLessThan(300);
    const bundle = await makeBundle({ 'assets/orders.js': 'x', 'assets/customers.js': 'x' });
    bundleRef = (await tenant.api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref;
  });

  it('records one event per change, naming the token and request that caused it; a no-op records none; another tenant sees none', async () => {
    // A ready ingest that activates: deployment.ready, then deployment.activated (nothing to re-check yet).
    const first = await tenant.api.post(`/environments/${env}/deployments`, {
      manifest: manifestOf([{ key: 'orders', columns: v1 }, { key: 'customers', columns: [{ name: 'id', type: 'integer' }] }]),
      bundle_ref: bundleRef,
      git: { branch: 'main', sha: 'v1' },
    });
    expect(first.status, first.text).toBe(201);
    const firstId = first.body.data.id as string;

    // A failed ingest: deployment.failed with its error codes, and no activation.
    const failed = await tenant.api.post(`/environments/${env}/deployments`, {
      manifest: manifestOf([{ key: 'orders', deps: ['missing'] }]),
      bundle_ref: bundleRef,
      git: { branch: 'main', sha: 'bad' },
    });
    expect(failed.status, failed.text).toBe(422);
    const failedId = failed.body.data.id as string;
    const failedCodes = [...new Set((failed.body.data.validation.errors as Array<{ code: string }>).map((error) => error.code))];
    expect(failedCodes).toContain('unknown_dependency');

    // A run of v1 stored orders with v1's columns; v2 (ingested without activating) changes orders' id to string.
    const stored = await recordMaterialization(stack, tenant.tenantId, { environment_id: environmentId, asset_key: 'orders', columns: v1.map((c) => ({ nullable: false, ...c })), row_count: 10 });
    await recordMaterialization(stack, tenant.tenantId, { environment_id: environmentId, asset_key: 'customers', columns: [{ name: 'id', type: 'integer', nullable: false }], row_count: 3 });
    const second = await tenant.api.post(`/environments/${env}/deployments`, {
      manifest: manifestOf([{ key: 'orders', columns: v2 }, { key: 'customers', columns: [{ name: 'id', type: 'integer' }] }]),
      bundle_ref: bundleRef,
      git: { branch: 'main', sha: 'v2' },
      activate: false,
    });
    expect(second.status, second.text).toBe(201);
    const secondId = second.body.data.id as string;

    // Its activation (a request of its own): the re-check quarantines v1's orders, then the pointer moves.
    const activation = await tenant.api.post(`/deployments/${secondId}/activate`, {});
    expect(activation.status, activation.text).toBe(200);
    expect(activation.body.data.recheck).toEqual({ checked: 2, quarantined: ['orders'] });

    // Activating it again moves nothing and quarantines nothing anew: no event.
    const again = await tenant.api.post(`/deployments/${secondId}/activate`, {});
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.recheck).toEqual({ checked: 2, quarantined: ['orders'] });

    // A marker written after everything above, through the same relay: once it is in, nothing more is coming.
    const marker = await tenant.api.post(`/environments/${env}/deployments`, { manifest: { version: 2 }, bundle_ref: bundleRef });
    expect(marker.status, marker.text).toBe(422);
    const events = await scopeEventsWhen(tenant.api, env, (all) => all.some((event) => event.subject.id === marker.body.data.id));
    const ours = events.filter((event) => event.subject.id !== marker.body.data.id);

    expect(ours.map((event) => [event.type, event.subject, event.request_id])).toEqual([
      ['deployment.ready', { kind: 'deployment', id: firstId }, requestIdOf(first)],
      ['deployment.activated', { kind: 'deployment', id: firstId }, requestIdOf(first)],
      ['deployment.failed', { kind: 'deployment', id: failedId }, requestIdOf(failed)],
      ['deployment.ready', { kind: 'deployment', id: secondId }, requestIdOf(second)],
      ['materialization.quarantined', { kind: 'materialization', id: stored.id }, requestIdOf(activation)],
      ['deployment.activated', { kind: 'deployment', id: secondId }, requestIdOf(activation)],
    ]);
    for (const event of events) expect([event.type, event.actor, event.environment]).toEqual([event.type, tenant.tokenId, env]);
    expect(ours[0]!.data).toEqual({ bundle_ref: bundleRef, warnings: first.body.data.validation.warnings.length });
    expect(ours[1]!.data).toEqual({ previous_deployment_id: null, checked: 0, quarantined: [] });
    expect(ours[2]!.data).toEqual({ bundle_ref: bundleRef, error_codes: failedCodes });
    expect(ours[3]!.data).toEqual({ bundle_ref: bundleRef, warnings: second.body.data.validation.warnings.length });
    expect(ours[4]!.data).toEqual({ asset: 'orders', deployment_id: secondId, reason: expect.stringContaining('id') });
    expect(ours[5]!.data).toEqual({ previous_deployment_id: firstId, checked: 2, quarantined: ['orders'] });

    // Filters by subject and type reach them too.
    expect((await allEvents(tenant.api, `&subject=${secondId}`)).map((event) => event.type)).toEqual(['deployment.ready', 'deployment.activated']);
    expect((await allEvents(tenant.api, `&type=materialization.*`)).map((event) => event.subject.id)).toEqual([stored.id]);

    // Another tenant sees none of them, by any filter.
    expect(await allEvents(other.api)).toEqual([]);
    expect(await allEvents(other.api, `&environment=${env}`)).toEqual([]);
    expect(await allEvents(other.api, `&subject=${secondId}`)).toEqual([]);
    expect(await allEvents(other.api, `&type=deployment.*`)).toEqual([]);
  });
});

describe('a retried step records its event once (the repositories on a database of their own)', () => {
  let connection: mongoose.Connection;
  let outbox: EventOutbox;
  let deployments: DeploymentRepository;
  let materializations: MaterializationRepository;
  const tenantId = 'ten_retried';
  const environment = { id: 'env_retried', name: 'retried' };
  const cause = { actor: 'tok_retried', requestId: 'req_retried' };

  beforeAll(async () => {
    connection = await mongoose.createConnection(stack.mongoUrl, { dbName: `deployment_events_${randomBytes(4).toString('hex')}` }).asPromise();
    outbox = new EventOutbox(connection);
    const bundles = new BundleRepository(connection);
    deployments = new DeploymentRepository(connection, bundles, outbox);
    materializations = new MaterializationRepository(connection, outbox);
    await Promise.all([outbox.ensureIndexes(), bundles.ensureIndexes(), deployments.ensureIndexes(), materializations.ensureIndexes()]);
  });

  afterAll(async () => {
    await connection?.dropDatabase();
    await connection?.close();
  });

  const outboxRows = async () =>
    (await outbox.pending(1000)).filter((row) => row.tenant_id === tenantId).map((row) => [row.type, row.subject.id, row.actor]);

  const record = (id: string, status: 'ready' | 'failed'): DeploymentRecord => ({
    id,
    environment_id: environment.id,
    environment_name: environment.name,
    status,
    git: { branch: 'main', sha: id },
    bundle_ref: `sha256:${'b'.repeat(64)}`,
    sdk_version: null,
    validation: { errors: status === 'failed' ? [{ code: 'manifest_invalid', path: 'version', message: 'x' }] : [], warnings: [] },
    allow_contract_changes: [],
    created_by: null,
  });

  it('an ingest outcome, an activation and a quarantine, each done twice: one event each', async () => {
    expect(await deployments.recordOnce(tenantId, record('dep_one', 'ready'), new Date(), cause)).toBe(true);
    expect(await deployments.recordOnce(tenantId, record('dep_one', 'ready'), new Date(), cause)).toBe(false);
    expect(await deployments.recordOnce(tenantId, record('dep_bad', 'failed'), new Date(), ENGINE_CAUSE)).toBe(true);
    expect(await deployments.recordOnce(tenantId, record('dep_bad', 'failed'), new Date(), ENGINE_CAUSE)).toBe(false);
    expect(await deployments.recordOnce(tenantId, record('dep_two', 'ready'), new Date(), cause)).toBe(true);

    const recheck: Recheck = { checked: 1, quarantined: ['orders'] };
    const activation = (deploymentId: string) => ({ environment, deploymentId, recheck, pointerBefore: null, cause });
    expect(await deployments.recordActivation(tenantId, activation('dep_one'))).toBe(true);
    expect(await deployments.recordActivation(tenantId, activation('dep_one'))).toBe(false);
    // A failed deployment is never recorded active.
    expect(await deployments.recordActivation(tenantId, activation('dep_bad'))).toBe(false);
    expect(await deployments.recordActivation(tenantId, activation('dep_two'))).toBe(true);
    expect(await deployments.recordActivation(tenantId, activation('dep_two'))).toBe(false);
    expect((await deployments.find(tenantId, 'dep_one'))?.active).toBe(false);
    expect((await deployments.find(tenantId, 'dep_two'))?.active).toBe(true);

    const stored = await materializations.record(tenantId, {
      environment_id: environment.id,
      asset_key: 'orders',
      columns: [{ name: 'id', type: 'integer', nullable: false }],
      row_count: 1,
      location: null,
      bytes: null,
      run_id: null,
      attempt_id: null,
    });
    expect(await materializations.quarantine(tenantId, stored.id, 'id changed', 'dep_two', { environment, cause })).toBe(true);
    expect(await materializations.quarantine(tenantId, stored.id, 'id changed', 'dep_two', { environment, cause })).toBe(false);

    expect(await outboxRows()).toEqual([
      ['deployment.ready', 'dep_one', 'tok_retried'],
      ['deployment.failed', 'dep_bad', 'engine'],
      ['deployment.ready', 'dep_two', 'tok_retried'],
      ['deployment.activated', 'dep_one', 'tok_retried'],
      ['deployment.activated', 'dep_two', 'tok_retried'],
      ['materialization.quarantined', stored.id, 'tok_retried'],
    ]);
    const activated = (await outbox.pending(1000)).filter((row) => row.type === 'deployment.activated' && row.tenant_id === tenantId);
    expect(activated.map((row) => row.data.previous_deployment_id)).toEqual([null, 'dep_one']);
  });
});
