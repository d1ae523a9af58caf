import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import { findOnPath, type Reporter } from './binaries.ts';
import { ServerUnavailableError, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { canConnect, freePortInRange, waitUntil } from './network.ts';
import { redisAclFile, redisServerBinary, redisServerCommand, redisUrlFor, type RedisAcl } from './redis-server.ts';

/** The first node's port under `npm start`; the others follow it (the usual Redis Cluster ports). */
export const REDIS_CLUSTER_FIRST_PORT = 7000;

/** What a node uses to talk to its peers: its port plus this (fixed by Redis). */
const CLUSTER_BUS_OFFSET = 10_000;

export interface StartRedisClusterOptions {
  /** Node i lives in `<dataDir>/redis-cluster/node-<i>`, its log in `<dataDir>/logs/redis-<i>.log`. */
  dataDir: string;
  /** Default 3, the least Redis Cluster takes. */
  masters?: number;
  /** Default 1. */
  replicasPerMaster?: number;
  /**
   * 'default': ports 7000.. (npm start); otherwise free ports from 20000..22767, so that
   * port+10000 (the cluster bus) is a valid port too. A node made before keeps its port.
   */
  ports?: 'default';
  /** Keep data across restarts (append-only file). Default true. */
  persist?: boolean;
  /** As for startRedis: `default` off, the admin and these users only, on every node. */
  acl?: RedisAcl;
  /** `maxmemory` in MiB on every node, with `noeviction`, as startRedis. */
  maxMemoryMb?: number;
  /** cluster-node-timeout; default 2000 (a replica takes over a dead master a few seconds later). */
  nodeTimeoutMs?: number;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

export interface RedisClusterServer extends BackingServer {
  /** Every node, masters first as created: to kill/restart one in failover tests and to supervise each. */
  nodes: { name: string; process: ManagedProcess; address: string }[];
}

/** Redis's config-file quoting, so that a path or password with a space or quote stays one value. */
function confValue(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * A node's configuration. A file rather than arguments: with an ACL it holds the admin's
 * password (`masterauth`, as replicas replicate as the admin with `default` off), which must
 * not be on a command line. Only what differs from Redis's defaults: a cluster that loses a
 * slot stays visibly down (`cluster-require-full-coverage yes`, `cluster-allow-reads-when-down no`).
 */
function nodeConfig(node: { port: number; dir: string }, options: StartRedisClusterOptions, aclFile: string | undefined): string {
  const lines = [
    '# Written by envengine at each start of this Redis Cluster node.',
    `port ${node.port}`,
    'bind 127.0.0.1',
    `dir ${confValue(node.dir)}`,
    'daemonize no',
    'cluster-enabled yes',
    'cluster-config-file nodes.conf',
    `cluster-node-timeout ${options.nodeTimeoutMs ?? 2000}`,
    `appendonly ${(options.persist ?? true) ? 'yes' : 'no'}`,
    'save ""',
    // A replica's full sync starts at once instead of 5 s later (Redis waits for more
    // replicas to share the transfer; each master here has one): every restart resyncs.
    'repl-diskless-sync-delay 0',
  ];
  if (options.acl && aclFile) {
    lines.push(`aclfile ${confValue(aclFile)}`, `masteruser ${confValue(options.acl.admin.username)}`, `masterauth ${confValue(options.acl.admin.password)}`);
  }
  if (options.maxMemoryMb !== undefined) lines.push(`maxmemory ${options.maxMemoryMb}mb`, 'maxmemory-policy noeviction');
  return `${lines.join('\n')}\n`;
}

/** What a node's `nodes.conf` (Redis's own record of the cluster) says: its port, and whether it has joined a cluster. */
function previousRun(nodesConf: string): { port?: number; formed: boolean } {
  if (!existsSync(nodesConf)) return { formed: false };
  const nodeLines = readFileSync(nodesConf, 'utf8')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('vars '));
  // `<id> <ip>:<port>@<bus port> myself,master ...`
  const myself = nodeLines.find((line) => line.split(' ')[2]?.split(',').includes('myself'));
  const port = myself ? Number(/:(\d+)@/.exec(myself)?.[1]) : undefined;
  // A node started alone knows only itself; one in a cluster knows its peers.
  return { port: port || undefined, formed: nodeLines.length > 1 };
}

/** A port for a node that has none yet, its bus port free too. */
async function newPort(fixed: number | undefined, taken: Set<number>): Promise<number> {
  if (fixed !== undefined) return fixed;
  for (;;) {
    // Bus ports at most 32767, below Linux's ephemeral range: there an outgoing connection may
    // hold one by the time the node binds it (seen: "Failed listening on port 36400 (cluster)").
    const port = await freePortInRange(20_000, 32_767 - CLUSTER_BUS_OFFSET);
    if (taken.has(port) || taken.has(port + CLUSTER_BUS_OFFSET) || (await canConnect('127.0.0.1', port + CLUSTER_BUS_OFFSET))) continue;
    return port;
  }
}

/** Runs `probe` on one node as `credential`, on a connection that neither retries nor queues. */
async function onNode<T>(address: string, credential: { username: string; password: string } | undefined, probe: (client: Redis) => Promise<T>): Promise<T> {
  const [host, port] = address.split(':');
  const client = new Redis({
    host,
    port: Number(port),
    username: credential?.username,
    password: credential?.password,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined); // a refused probe is an answer, not an error
  try {
    await client.connect();
    return await probe(client);
  } finally {
    client.disconnect();
  }
}

/** `key:value` lines (CLUSTER INFO, INFO) as a map. */
function fields(text: string): Map<string, string> {
  return new Map(
    text
      .split(/\r?\n/)
      .filter((line) => line.includes(':'))
      .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
  );
}

/**
 * Whether one node serves: every slot covered, every node known and healthy in its view, and,
 * when it is a replica, its link to its master up (until then it holds none of the master's data,
 * and a failover would lose it). Roles are asked, not assumed: a failover swaps them for good.
 */
async function nodeReady(address: string, credential: { username: string; password: string } | undefined, total: number): Promise<boolean> {
  return onNode(address, credential, async (client) => {
    const info = fields(String(await client.call('CLUSTER', 'INFO')));
    if (info.get('cluster_state') !== 'ok') return false;
    const healthy = String(await client.call('CLUSTER', 'NODES'))
      .split('\n')
      .filter((line) => line.trim())
      .filter((line) => !line.split(' ')[2]!.split(',').some((flag) => ['fail', 'fail?', 'handshake', 'noaddr'].includes(flag)));
    if (healthy.length !== total) return false;
    const replication = fields(await client.info('replication'));
    return replication.get('role') === 'master' || replication.get('master_link_status') === 'up';
  });
}

/**
 * Stops a node with SIGTERM, sent again each second while it runs: a replica that has just had a
 * full sync refuses to stop while it writes its first append-only file ("Writing initial AOF,
 * can't exit") and does not try again, so one SIGTERM then waited 10 s for SIGKILL.
 */
async function stopNode(node: ManagedProcess): Promise<void> {
  const stopped = node.stop();
  const again = setInterval(() => {
    try {
      if (node.running && node.pid) process.kill(node.pid, 'SIGTERM');
    } catch {
      // it has just exited
    }
  }, 1000);
  try {
    await stopped;
  } finally {
    clearInterval(again);
  }
}

/**
 * A Redis Cluster of `redis-server` processes on 127.0.0.1 (the cluster profile's Redis):
 * made with `redis-cli --cluster create` at the first start, found again from each node's
 * `nodes.conf` after that.
 */
export async function startRedisCluster(options: StartRedisClusterOptions): Promise<RedisClusterServer> {
  const env = options.env ?? process.env;
  const masters = options.masters ?? 3;
  const replicasPerMaster = options.replicasPerMaster ?? 1;
  if (masters < 3) throw new Error(`A Redis Cluster needs at least 3 masters (asked for ${masters}).`);
  const total = masters * (1 + replicasPerMaster);
  const found = redisServerBinary(options.report, env);
  if (!found) {
    throw new ServerUnavailableError('Redis Cluster', 'Install Redis: sudo apt-get install redis-server.');
  }
  const root = join(options.dataDir, 'redis-cluster');
  const logs = join(options.dataDir, 'logs');
  const before = Array.from({ length: total }, (_, i) => previousRun(join(root, `node-${i}`, 'nodes.conf')));
  const formed = before.filter((node) => node.formed).length;
  if (formed !== 0 && formed !== total) {
    throw new Error(`${root} holds a cluster of another size, or a half-made one (${formed} of ${total} nodes have joined one): remove it to start afresh.`);
  }
  const create = formed === 0;
  const redisCli = create ? (findOnPath('redis-cli', env) ?? [join(dirname(found.path), 'redis-cli')].find((path) => existsSync(path))) : undefined;
  if (create && !redisCli) throw new ServerUnavailableError('Redis Cluster', 'Install redis-cli: sudo apt-get install redis-tools.');

  // A node keeps the port it was made with: its peers' nodes.conf name it by that address.
  const taken = new Set<number>();
  const ports: number[] = [];
  for (const [i, node] of before.entries()) {
    const port = node.port ?? (await newPort(options.ports === 'default' ? REDIS_CLUSTER_FIRST_PORT + i : undefined, taken));
    taken.add(port).add(port + CLUSTER_BUS_OFFSET);
    ports.push(port);
  }
  for (const port of ports) {
    if (await canConnect('127.0.0.1', port)) throw new Error(`Port ${port}, a Redis Cluster node's in ${root}, is in use: stop what listens there.`);
  }

  const credential = options.acl?.admin;
  const nodes: RedisClusterServer['nodes'] = ports.map((port, i) => {
    const dir = join(root, `node-${i}`);
    mkdirSync(dir, { recursive: true });
    let aclFile: string | undefined;
    if (options.acl) {
      aclFile = join(dir, 'users.acl');
      writeFileSync(aclFile, redisAclFile(options.acl), { mode: 0o600 });
      chmodSync(aclFile, 0o600);
    }
    const confFile = join(dir, 'redis.conf');
    writeFileSync(confFile, nodeConfig({ port, dir }, options, aclFile), { mode: 0o600 });
    chmodSync(confFile, 0o600); // mode applies only to a new file
    const name = `redis-${i}`;
    const process_ = new ManagedProcess({ name, ...redisServerCommand(found.path, [confFile]), logFile: join(logs, `${name}.log`) });
    return { name, process: process_, address: `127.0.0.1:${port}` };
  });
  // All at once: stopped one by one, a master's replicas could take over from it before their own turn.
  const stop = async () => {
    await Promise.all(nodes.map((node) => stopNode(node.process)));
  };

  try {
    await Promise.all(
      nodes.map((node) =>
        waitUntil(node.name, () => onNode(node.address, credential, async (client) => (await client.ping()) === 'PONG'), {
          timeoutMs: 15_000,
          alive: () => node.process.running,
          logFile: node.process.logFile,
        }),
      ),
    );
    if (create) {
      options.report(`Creating a Redis Cluster of ${masters} masters with ${replicasPerMaster} replica(s) each in ${root}`);
      const result = spawnSync(
        redisCli!,
        ['--cluster', 'create', ...nodes.map((node) => node.address), '--cluster-replicas', String(replicasPerMaster), '--cluster-yes', ...(credential ? ['--user', credential.username] : [])],
        // The password from the environment: never on a command line.
        { env: credential ? { ...env, REDISCLI_AUTH: credential.password } : env, encoding: 'utf8', timeout: 60_000 },
      );
      if (result.status !== 0) throw new Error(`redis-cli --cluster create failed (exit ${result.status ?? result.signal}): ${result.stderr || result.stdout}`);
    }
    await waitUntil('Redis Cluster', async () => {
      for (const node of nodes) if (!(await nodeReady(node.address, credential, total))) return false;
      return true;
    }, { timeoutMs: 60_000, alive: () => nodes.every((node) => node.process.running), logFile: join(logs, 'redis-*.log') });
  } catch (error) {
    await stop();
    // Nothing was stored yet: the next start makes the cluster again instead of waiting on a half-made one.
    if (create) for (const i of nodes.keys()) rmSync(join(root, `node-${i}`, 'nodes.conf'), { force: true });
    throw error;
  }

  const url = nodes.map((node) => `redis://${node.address}`).join(',');
  return {
    name: 'redis',
    url,
    adminUrl: credential ? redisUrlFor(url, credential) : url,
    source: found.source,
    process: nodes[0]!.process,
    nodes,
    links: {},
    stop,
  };
}
