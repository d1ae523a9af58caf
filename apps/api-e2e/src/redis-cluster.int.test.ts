import { join } from 'node:path';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { attemptQueueKeyName, tenantAttemptQueue } from '@envengine/attempt-queues';
import type { RedisClusterServer } from '@envengine/backing-servers';
import { Run } from '@envengine/contracts';
import { connectRedis, everyRedisServer, whenRedisReady } from '@envengine/redis-connections';
import { createTenant, startPoolWorker, startTestStack, until, type PoolWorker, type TestStack, type TestTenant } from '@envengine/test-harness';
import { slotOwners } from './redis-fixtures.ts';
import { deployRunsProject, issueCredential, RUN_TEST_SETTINGS, waitForRun } from './runs-fixtures.ts';

const shared = inject('stack');

/**
 * The cluster profile's Redis: a Redis Cluster of three masters with a replica each. A
 * tenant's queue lives on one master (its keys share a hash tag); that master is killed
 * with runs queued on it and the queue's pool worker not yet started. Its replica takes
 * over, and every run reaches a terminal state, once, without the old master coming back.
 */
describe('the engine on a Redis Cluster', () => {
  let stack: TestStack;
  let redis: RedisClusterServer;
  let admin: Cluster;
  let tenant: TestTenant;
  const workers: PoolWorker[] = [];

  beforeAll(async () => {
    // Its own Redis Cluster; MongoDB and Temporal are the suite's.
    stack = await startTestStack({ profile: 'cluster', replicas: 1, mongoUrl: shared.mongoUrl, temporalAddress: shared.temporalAddress, env: RUN_TEST_SETTINGS });
    expect('nodes' in stack.servers.redis, 'the cluster profile runs a Redis Cluster').toBe(true);
    redis = stack.servers.redis as RedisClusterServer;
    admin = connectRedis(stack.info.redisUrl, { maxRetriesPerRequest: 3 }) as Cluster;
    await whenRedisReady(admin);
    tenant = await createTenant(stack.info, 'redis-cluster');
    await deployRunsProject(tenant, join(stack.info.dataDir, 'lake', tenant.tenantId), 'remote');
  }, 240_000);

  afterAll(async () => {
    for (const worker of workers) await worker.process.stop();
    admin?.disconnect();
    await stack?.stop();
  });

  it('is three masters with a replica each, every slot served, and the queues of one tenant on one node', async () => {
    const info = String(await admin.call('CLUSTER', 'INFO'));
    expect(info).toMatch(/cluster_state:ok/);
    expect(info).toMatch(/cluster_slots_assigned:16384/);
    expect(info).toMatch(/cluster_known_nodes:6/);
    expect(info).toMatch(/cluster_size:3/);
    expect(redis.nodes).toHaveLength(6);
    const queue = attemptQueueKeyName(tenantAttemptQueue(tenant.tenantId));
    const owners = await Promise.all(['wait', 'active', 'meta', 'events', 'marker'].map((suffix) => slotOwners(admin, `envengine:${queue}:${suffix}`)));
    expect(new Set(owners.map((owner) => owner.master)).size).toBe(1);
  });

  it('loses no queued run when the master of their queue is killed: its replica takes over and a pool worker runs them all', { timeout: 240_000 }, async () => {
    const credential = await issueCredential(tenant);
    // The pool's user is on every node, each replica included (the one that takes over
    // must let the pool's worker in), whether or not the engine's client has met it.
    const { servers, release } = await everyRedisServer(admin);
    try {
      expect(servers).toHaveLength(6);
      for (const { server, address } of servers) {
        expect(await server.call('ACL', 'GETUSER', credential.redis.username), address).not.toBeNull();
      }
    } finally {
      release();
    }
    const queued = 12;
    const runIds: string[] = [];
    for (let index = 0; index < queued; index += 1) {
      const created = await tenant.api.post('/environments/prod/runs', { assets: ['orders'] });
      expect(created.status, created.text).toBe(201);
      runIds.push(created.body.data.id);
    }
    const queueKey = `envengine:${attemptQueueKeyName(credential.queue)}:wait`;
    // Evidence that the jobs are in Redis (no worker yet), not only in the attempt rows.
    await until(() => admin.llen(queueKey), (length) => length === queued, 10_000, 100);

    const before = await slotOwners(admin, queueKey);
    expect(before.replicas).toHaveLength(1);
    const victim = redis.nodes.find((node) => node.address === before.master)!;
    const killedAt = performance.now();
    process.kill(victim.process.pid!, 'SIGKILL');
    await victim.process.waitForExit();

    // The replica is elected master (cluster-node-timeout, then a vote): seen through the cluster, not waited for by time.
    const after = await until(() => slotOwners(admin, queueKey).catch(() => undefined), (owners) => owners?.master === before.replicas[0], 60_000, 200);
    expect(after!.master).toBe(before.replicas[0]);
    const promotedAfterMs = performance.now() - killedAt;

    // A run made during and after the change is queued too.
    const late = await until(() => tenant.api.post('/environments/prod/runs', { assets: ['orders'] }), (response) => response.status === 201, 30_000, 200);
    runIds.push(late.body.data.id);

    // The pool's Redis user and the worker scripts are on the new master: its worker runs everything.
    workers.push(await startPoolWorker(stack.info, credential, 'after-failover'));
    const runs = await Promise.all(runIds.map((id) => waitForRun(tenant, id, 90_000)));
    console.info(`Redis master killed with ${queued} runs queued on it: replica promoted after ${Math.round(promotedAfterMs)} ms; all ${runIds.length} runs done ${Math.round(performance.now() - killedAt)} ms after the kill`);
    expect(runs.map((run) => run.status)).toEqual(runIds.map(() => 'succeeded'));
    // Once each: one attempt per run, as none was lost or given twice.
    for (const id of runIds) {
      const run = Run.parse((await tenant.api.get(`/runs/${id}`)).body.data);
      expect(run.attempts.map((attempt) => attempt.status), id).toEqual(['succeeded']);
    }
    expect(victim.process.running, 'the old master stayed down throughout').toBe(false);

    // The old master comes back as a replica of the new one, and the cluster is whole again.
    victim.process.respawn();
    await until(async () => slotOwners(admin, queueKey), (owners) => owners.replicas.includes(victim.address), 60_000, 200);
    const again = await tenant.api.post('/environments/prod/runs', { assets: ['orders'] });
    expect(again.status, again.text).toBe(201);
    expect(await waitForRun(tenant, again.body.data.id)).toMatchObject({ status: 'succeeded' });
  });
});
