import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from './network.ts';
import { startRedisCluster, type RedisClusterServer } from './redis-cluster.ts';
import type { RedisAcl } from './redis-server.ts';

const acl: RedisAcl = {
  admin: { username: 'admin', password: randomBytes(12).toString('hex') },
  users: [{ username: 'app', password: randomBytes(12).toString('hex'), rules: ['~app:*', '+@all'] }],
};
const user = acl.users[0]!;
const dataDir = mkdtempSync(join(tmpdir(), 'envengine-redis-cluster-'));
const reported: string[] = [];
const opened: Array<{ disconnect(): void }> = [];
let server: RedisClusterServer;

function start(): Promise<RedisClusterServer> {
  return startRedisCluster({ dataDir, acl, report: (line) => reported.push(line) });
}

/** One command on one node, as `credential` (null: the `default` user), on a connection that does not retry. */
async function onNode<T>(address: string, run: (client: Redis) => Promise<T>, credential: { username: string; password: string } | null = acl.admin): Promise<T> {
  const [host, port] = address.split(':');
  // No ready check: as `default` its INFO is refused, and the refusal is what is tested.
  const client = new Redis({ host, port: Number(port), ...credential, lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await run(client);
  } finally {
    client.disconnect();
  }
}

function fields(text: string): Map<string, string> {
  return new Map(text.split(/\r?\n/).filter((line) => line.includes(':')).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]));
}

const clusterInfo = (address: string) => onNode(address, async (client) => fields(String(await client.call('CLUSTER', 'INFO'))));
const replication = (address: string) => onNode(address, async (client) => fields(await client.info('replication')));

/** The master and replicas that serve a key's slot, as `host:port`, as node `via` sees them. */
async function servingKey(key: string, via = server.nodes[0]!.address): Promise<{ master: string; replicas: string[] }> {
  return onNode(via, async (client) => {
    const slot = Number(await client.call('CLUSTER', 'KEYSLOT', key));
    // `<id> <ip:port@bus> <flags> <master id or -> ... <slot ranges>`; CLUSTER SLOTS would leave out
    // a replica that has had no write yet (replication offset 0).
    const nodes = String(await client.call('CLUSTER', 'NODES')).trim().split('\n').map((line) => line.split(' '));
    const master = nodes.find((fields) =>
      fields.slice(8).some((range) => {
        const [from, to = from] = range.split('-').map(Number);
        return from! <= slot && slot <= to!;
      }),
    )!;
    const address = (fields: string[]) => fields[1]!.split('@')[0]!;
    return { master: address(master), replicas: nodes.filter((fields) => fields[3] === master[0]).map(address) };
  });
}

/** The application's view: an ioredis Cluster as the ACL's user. */
function userCluster(): Cluster {
  const cluster = new Cluster(
    server.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.address.split(':')[1]) })),
    { redisOptions: { username: user.username, password: user.password } },
  );
  cluster.on('error', () => undefined); // a node killed on purpose
  opened.push(cluster);
  return cluster;
}

/** A command through the Cluster client that may hang while a master is down: given up after a second. */
function within<T>(promise: Promise<T>, ms = 1000): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms))]);
}

const KEYS = Array.from({ length: 30 }, (_, i) => `app:spread:${i}`);

describe('startRedisCluster', () => {
  let cluster: Cluster;

  beforeAll(async () => {
    server = await start();
    cluster = userCluster();
  }, 240_000);

  afterAll(async () => {
    for (const client of opened) client.disconnect();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('forms 3 masters with a replica each, behind the ACL', async () => {
    expect(reported.some((line) => line.startsWith('Creating a Redis Cluster'))).toBe(true);
    expect(server.nodes.map((node) => node.name)).toEqual(['redis-0', 'redis-1', 'redis-2', 'redis-3', 'redis-4', 'redis-5']);
    expect(server.url).toBe(server.nodes.map((node) => `redis://${node.address}`).join(','));
    expect(server.adminUrl).toBe(server.nodes.map((node) => `redis://admin:${acl.admin.password}@${node.address}`).join(','));
    expect(server.process).toBe(server.nodes[0]!.process);
    for (const node of server.nodes) {
      const info = await clusterInfo(node.address);
      expect(info.get('cluster_state')).toBe('ok');
      expect(info.get('cluster_slots_assigned')).toBe('16384');
      expect(info.get('cluster_slots_ok')).toBe('16384');
      expect(info.get('cluster_known_nodes')).toBe('6');
      expect(info.get('cluster_size')).toBe('3');
    }
    // Masters first as created; each replica in sync as soon as the start returns.
    for (const [i, node] of server.nodes.entries()) {
      const roles = await replication(node.address);
      expect(roles.get('role')).toBe(i < 3 ? 'master' : 'slave');
      if (i >= 3) expect(roles.get('master_link_status')).toBe('up');
    }

    for (const key of KEYS) await cluster.set(key, `value of ${key}`);
    const owners = new Set(await Promise.all(KEYS.map(async (key) => (await servingKey(key)).master)));
    expect([...owners].sort()).toEqual(server.nodes.slice(0, 3).map((node) => node.address).sort());
    for (const key of KEYS) expect(await cluster.get(key)).toBe(`value of ${key}`);
    await expect(cluster.set('other:key', 'x')).rejects.toThrow(/NOPERM/);

    for (const node of server.nodes) {
      await expect(onNode(node.address, (client) => client.ping(), null)).rejects.toThrow(/NOAUTH/);
      await expect(onNode(node.address, (client) => client.call('AUTH', 'default', ''), null)).rejects.toThrow(/WRONGPASS/);
    }
  }, 60_000);

  it('promotes a replica when its master is killed, and takes the master back as a replica', async () => {
    const key = 'app:failover';
    await cluster.set(key, 'before');
    // The master's replica shows in a node's CLUSTER NODES once gossip has carried it there,
    // which on a busy machine can come after the replica reports its link up.
    let serving = await servingKey(key);
    await waitUntil('a replica of the key\'s master in the cluster\'s view', async () => (serving = await servingKey(key)).replicas.length > 0, {
      timeoutMs: 60_000,
      explain: async () => String(await onNode(server.nodes[0]!.address, (client) => client.call('CLUSTER', 'NODES'))).replace(/\n/g, ' | '),
    });
    const { master, replicas } = serving;
    const victim = server.nodes.find((node) => node.address === master)!;
    const heir = replicas[0]!;
    // Replication is asynchronous: the key must be on the replica before its master dies.
    await waitUntil('the key on the replica', () => onNode(heir, async (client) => {
      await client.call('READONLY');
      return (await client.get(key)) === 'before';
    }), { timeoutMs: 60_000 });

    const killedAt = Date.now();
    process.kill(victim.process.pid!, 'SIGKILL');
    await victim.process.waitForExit();
    await waitUntil('the key again through the Cluster client', async () => {
      if ((await within(cluster.get(key))) !== 'before') return false;
      await within(cluster.set(key, 'after'));
      return true;
    }, { timeoutMs: 60_000 });
    const failoverMs = Date.now() - killedAt;
    const survivors = server.nodes.filter((node) => node !== victim);
    await waitUntil('cluster_state:ok on every other node', async () => {
      for (const node of survivors) if ((await clusterInfo(node.address)).get('cluster_state') !== 'ok') return false;
      return true;
    }, { timeoutMs: 60_000 });
    expect((await replication(heir)).get('role')).toBe('master');
    expect((await servingKey(key, heir)).master).toBe(heir);
    console.info(`failover: the key was readable and writable again ${failoverMs} ms after SIGKILL`);

    const restartedAt = Date.now();
    victim.process.respawn();
    await waitUntil('the old master a replica of its heir', async () => {
      const roles = await replication(victim.address);
      return roles.get('role') === 'slave' && `${roles.get('master_host')}:${roles.get('master_port')}` === heir && roles.get('master_link_status') === 'up';
    }, { timeoutMs: 60_000, alive: () => victim.process.running, logFile: victim.process.logFile });
    console.info(`rejoin: in sync as a replica ${Date.now() - restartedAt} ms after restart`);
    for (const node of server.nodes) {
      const info = await clusterInfo(node.address);
      expect(info.get('cluster_state')).toBe('ok');
      expect(info.get('cluster_known_nodes')).toBe('6');
    }
    expect(await cluster.get(key)).toBe('after');
  }, 240_000);

  it('comes back from its data directory with its data, without making the cluster again', async () => {
    const ids = await Promise.all(server.nodes.map((node) => onNode(node.address, (client) => client.call('CLUSTER', 'MYID'))));
    const addresses = server.nodes.map((node) => node.address);
    const { master: ownerBefore } = await servingKey('app:failover');
    for (const client of opened.splice(0)) client.disconnect();
    await server.stop();
    // Each one on SIGTERM, the node just resynced after its restart included: none waited for SIGKILL.
    expect(server.nodes.map((node) => node.process.exitStatus)).toEqual(server.nodes.map(() => ({ code: 0, signal: null })));

    reported.length = 0;
    const startedAt = Date.now();
    server = await start();
    console.info(`restart: ready ${Date.now() - startedAt} ms after startRedisCluster`);
    expect(reported.filter((line) => line.startsWith('Creating'))).toEqual([]);
    expect(server.nodes.map((node) => node.address)).toEqual(addresses);
    expect(await Promise.all(server.nodes.map((node) => onNode(node.address, (client) => client.call('CLUSTER', 'MYID'))))).toEqual(ids);
    // Roles as they were left: the heir still masters the key's slot.
    expect((await servingKey('app:failover')).master).toBe(ownerBefore);

    const again = userCluster();
    expect(await again.get('app:failover')).toBe('after');
    for (const key of KEYS) expect(await again.get(key)).toBe(`value of ${key}`);
  }, 240_000);
});
