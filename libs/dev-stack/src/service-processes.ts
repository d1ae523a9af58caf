import { randomBytes } from 'node:crypto';
import type { Credentials } from './credentials.ts';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePortInRange, ManagedProcess, waitUntil, type ObjectStoreAdmin } from '@envengine/backing-servers';
import { loadOrCreateMasterKey } from './secrets-master-key.ts';
import { GATEWAY_METRICS_PORT, POOL_GATE_PORT, SERVICE_DATABASES, SERVICE_NAMES, SERVICES, type ServiceName } from './services.ts';

export const WORKSPACE_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');

/** Each service's own connection strings: the credential of its scope's user in each. */
export interface ServiceConnections {
  /** MongoDB of each scope; the workflow-worker takes the deployment scope's. */
  mongo: Record<keyof typeof SERVICE_DATABASES, string>;
  /** Redis of each service that uses it. */
  redis: Record<'gateway' | 'placement-service' | 'attempt-worker', string>;
}

export interface ServiceProcessOptions {
  dataDir: string;
  connections: ServiceConnections;
  /** The services' shared credentials (internal APIs, secret resolution), kept in the data directory. */
  internalCredentials: Credentials['internal'];
  temporalAddress: string;
  /** The engine's object store: its S3 endpoint, its IAM API (for the placement-service alone) and its administrator. */
  objectStore?: { url: string; iamUrl: string; admin: ObjectStoreAdmin };
  ports: 'default' | 'random';
  /** The database of each scope (with the stack's prefix). */
  databases: Record<keyof typeof SERVICE_DATABASES, string>;
  logLevel?: string;
  /** Extra environment for every service, e.g. a higher rate limit for benchmarks. */
  env?: Record<string, string>;
  /**
   * Processes of each deployable (default 1). With more, each service runs that many
   * replicas on their own ports, every caller is given all of their URLs (it balances
   * across them), and as many gateways, workflow-workers and local runners run.
   */
  replicas?: number;
}

/**
 * A free port for a service, below Linux's ephemeral range: a service binds after it has
 * connected to its servers, and an ephemeral port freed a moment ago could be one of those
 * connections' own by then (a gateway once found its metrics port taken so).
 */
const serviceFreePort = () => freePortInRange(20_000, 32_000);

/** The ports of a stack's processes, each replica's, the first one first. */
export interface StackPorts {
  /** Each deployable's (its `PORT`: its API, `/readyz` and, but for the gateway, `/metrics`). */
  services: Record<ServiceName, number[]>;
  /** Each gateway's `/metrics` listener (its `METRICS_PORT`). */
  gatewayMetrics: number[];
  /** Each placement-service's pool gate (its `POOL_GATE_PORT`). */
  poolGate: number[];
}

/**
 * The ports a stack's processes listen on. `default`: the first replica on the documented
 * port (the one docker-compose.yml uses too), the next ones 100 above each; `random`: free ones.
 */
export async function stackPorts(kind: 'default' | 'random', replicaCount: number): Promise<StackPorts> {
  const pick = async (defaultPort: number, replica: number) => (kind === 'default' ? defaultPort + 100 * replica : await serviceFreePort());
  const services = {} as Record<ServiceName, number[]>;
  for (const name of SERVICE_NAMES) {
    services[name] = [];
    for (let replica = 0; replica < replicaCount; replica++) services[name].push(await pick(SERVICES[name].defaultPort, replica));
  }
  const gatewayMetrics: number[] = [];
  for (let replica = 0; replica < replicaCount; replica++) gatewayMetrics.push(await pick(GATEWAY_METRICS_PORT, replica));
  const poolGate: number[] = [];
  for (let replica = 0; replica < replicaCount; replica++) poolGate.push(await pick(POOL_GATE_PORT, replica));
  return { services, gatewayMetrics, poolGate };
}

export interface RunningServices {
  /** The port of every process, each replica's. */
  ports: StackPorts;
  gatewayUrl: string;
  /** Each gateway's metrics listener (`/metrics`, on the loopback, never on the public port), the first one first. */
  gatewayMetricsUrls: string[];
  /** The first placement-service's pool gate (`redis://`): what pool credentials name as their Redis (PUBLIC_REDIS_URL). */
  poolGateUrl: string;
  /** The first replica's URL of each deployable. */
  urls: Record<ServiceName, string>;
  /** The first replica of each deployable. */
  processes: Record<ServiceName, ManagedProcess>;
  /** Every replica's URL of each deployable, the first one first. */
  replicaUrls: Record<ServiceName, string[]>;
  /** Every replica of each deployable, the first one first (`processes[name]`). */
  replicas: Record<ServiceName, ManagedProcess[]>;
  databases: Record<keyof typeof SERVICE_DATABASES, string>;
  /** Opens the secrets-service's `/internal/v1` (secret resolution), as the attempt runner holds it. */
  resolverCredential: string;
  /** What the gateway and the services share (internal APIs under `/internal/v1` of placement and deployments). */
  internalCredential: string;
  /** The Temporal task queue of this stack's workflow-worker (stacks may share one Temporal). */
  deploymentsTaskQueue: string;
  /** Starts one service's replica (default the first) again, after stopping it if it runs, with the same settings. */
  restart(name: ServiceName, env?: Record<string, string>, replica?: number): Promise<void>;
  /** Stops every replica of every service (in `stop`'s order), then starts them all again with the current credentials. */
  restartAll(): Promise<void>;
  /** Credentials for the services started from now on (after a rotation); running ones keep theirs until restarted. */
  setCredentials(connections: ServiceConnections, internalCredentials: Credentials['internal']): void;
  stop(): Promise<void>;
}

/** The first replica is named after its deployable, the next ones `<name>-2`, `<name>-3`… */
export function replicaName(name: ServiceName, replica: number): string {
  return replica === 0 ? name : `${name}-${replica + 1}`;
}

function builtEntry(name: ServiceName): string {
  const entry = join(WORKSPACE_ROOT, 'dist', 'apps', name, 'main.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: build the apps first (npx nx run-many -t build).`);
  return entry;
}

async function waitForReady(name: string, url: string, process_: ManagedProcess): Promise<void> {
  await waitUntil(name, async () => (await fetch(`${url}/readyz`)).status === 200, {
    timeoutMs: 60_000,
    alive: () => process_.running,
    logFile: process_.logFile,
  });
}

/**
 * Starts every service from its built bundle, on the same Node as this process, and waits
 * until each answers `/readyz`. Each gets its own connection strings, in its environment
 * only (never in its arguments, which every local user can read).
 */
export async function startServiceProcesses(options: ServiceProcessOptions): Promise<RunningServices> {
  let connections = options.connections;
  let internalCredential = options.internalCredentials.INTERNAL_CREDENTIAL;
  let resolverCredential = options.internalCredentials.RESOLVER_CREDENTIAL;
  // A key given in the environment wins; otherwise the one kept in the data directory.
  const masterKey = process.env.SECRETS_MASTER_KEY ?? loadOrCreateMasterKey(options.dataDir);
  const previousMasterKeys = process.env.SECRETS_PREVIOUS_MASTER_KEYS ?? '';
  const webhooksMasterKey = process.env.WEBHOOKS_MASTER_KEY ?? loadOrCreateMasterKey(options.dataDir, 'webhooks-master-key');
  // Stacks on one Temporal server must not take each other's workflow tasks.
  const deploymentsTaskQueue = options.ports === 'default' ? 'deployments' : `deployments-${randomBytes(4).toString('hex')}`;
  const replicaCount = options.replicas ?? 1;
  if (!Number.isInteger(replicaCount) || replicaCount < 1) throw new Error(`replicas must be a positive integer, not ${replicaCount}`);
  const allPorts = await stackPorts(options.ports, replicaCount);
  const { services: ports, gatewayMetrics: gatewayMetricsPorts, poolGate: poolGatePorts } = allPorts;
  const poolGateUrl = `redis://127.0.0.1:${poolGatePorts[0]}`;
  const replicaUrls = Object.fromEntries(
    SERVICE_NAMES.map((name) => [name, ports[name].map((port) => `http://127.0.0.1:${port}`)]),
  ) as Record<ServiceName, string[]>;
  const urls = Object.fromEntries(SERVICE_NAMES.map((name) => [name, replicaUrls[name][0]!])) as Record<ServiceName, string>;
  const databases = options.databases;
  const mongoScopeOf = (name: ServiceName): keyof typeof SERVICE_DATABASES | undefined =>
    name === 'workflow-worker' ? 'deployment-service' : name in SERVICE_DATABASES ? (name as keyof typeof SERVICE_DATABASES) : undefined;

  // Secret-handling settings go only to the processes that use them.
  const secretsEnvFor = (name: ServiceName): Record<string, string> => {
    if (name === 'secrets-service') {
      return { RESOLVER_CREDENTIAL: resolverCredential, SECRETS_MASTER_KEY: masterKey, SECRETS_PREVIOUS_MASTER_KEYS: previousMasterKeys };
    }
    // The placement-service resolves a binding for a worker's `ctx.connection` (audited).
    if (name === 'placement-service') {
      const store = options.objectStore;
      return {
        RESOLVER_CREDENTIAL: resolverCredential,
        WEBHOOKS_MASTER_KEY: webhooksMasterKey,
        // It issues each tenant keys to the engine's store that reach only that tenant's objects.
        ...(store ? { ENGINE_S3_URL: store.url, ENGINE_S3_IAM_URL: store.iamUrl, ENGINE_S3_ADMIN_ACCESS_KEY: store.admin.accessKeyId, ENGINE_S3_ADMIN_SECRET_KEY: store.admin.secretAccessKey } : {}),
      };
    }
    return {};
  };

  const envFor = (name: ServiceName, replica: number, extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    HOST: name === 'gateway' ? '0.0.0.0' : '127.0.0.1',
    PORT: String(ports[name][replica]),
    ...(name === 'gateway' ? { METRICS_PORT: String(gatewayMetricsPorts[replica]) } : {}),
    // Pool workers, which may run on other hosts as the gateway's clients do, reach their queues through it.
    ...(name === 'placement-service' ? { POOL_GATE_HOST: '0.0.0.0', POOL_GATE_PORT: String(poolGatePorts[replica]), PUBLIC_REDIS_URL: poolGateUrl } : {}),
    LOG_LEVEL: options.logLevel ?? 'info',
    INTERNAL_CREDENTIAL: internalCredential,
    // The deployment scope's two deployables share its database and its user.
    ...(mongoScopeOf(name) ? { MONGO_URL: connections.mongo[mongoScopeOf(name)!], MONGO_DB: databases[mongoScopeOf(name)!] } : {}),
    ...(name in connections.redis ? { REDIS_URL: connections.redis[name as keyof ServiceConnections['redis']] } : {}),
    TEMPORAL_ADDRESS: options.temporalAddress,
    PLACEMENT_SERVICE_URL: replicaUrls['placement-service'].join(','),
    DEPLOYMENT_SERVICE_URL: replicaUrls['deployment-service'].join(','),
    SECRETS_SERVICE_URL: replicaUrls['secrets-service'].join(','),
    DEPLOYMENTS_TASK_QUEUE: deploymentsTaskQueue,
    // The engine's runner calls the services' internal API directly (PLACEMENT_SERVICE_URL, DEPLOYMENT_SERVICE_URL).
    // Tests and benchmarks keep the bundle cache in their own data directory; `npm start` uses
    // the worker's default, which the sandbox user can reach wherever the repository is.
    ...(name === 'attempt-worker' && options.ports === 'random' ? { BUNDLE_CACHE_DIR: join(options.dataDir, 'bundle-cache'), SPOOL_DIR: join(options.dataDir, 'spool') } : {}),
    // file:// storage prefixes must lie under the engine's storage root, in the stack's data directory.
    ...(name === 'placement-service' ? { STORAGE_ROOT: join(options.dataDir, 'lake') } : {}),
    // A binding may name the engine's own store as its endpoint (it is on the loopback, which the runner refuses otherwise).
    ...(name === 'attempt-worker' && options.objectStore ? { STORAGE_ENDPOINTS_ALLOWED: options.objectStore.url } : {}),
    // SANDBOX=off (user code without the OS sandbox) is the operator's explicit choice, passed on as given.
    ...(name === 'attempt-worker' && process.env.SANDBOX ? { SANDBOX: process.env.SANDBOX } : {}),
    // So is ASSET_CGROUPS; as an ordinary user (no cgroup of one's own to give out) the runner starts without them, and says so.
    ...(name === 'attempt-worker' ? { ASSET_CGROUPS: process.env.ASSET_CGROUPS ?? (process.getuid?.() === 0 ? 'required' : 'auto') } : {}),
    // ASSET_SECCOMP too (the filter needs no root: the runner's default, required, holds for everyone).
    ...(name === 'attempt-worker' && process.env.ASSET_SECCOMP ? { ASSET_SECCOMP: process.env.ASSET_SECCOMP } : {}),
    // Tracing (OTEL_EXPORTER_OTLP_ENDPOINT and the SDK's OTEL_* settings) is the operator's, passed on as given.
    ...Object.fromEntries(Object.entries(process.env).filter(([key, value]) => key.startsWith('OTEL_') && value !== undefined)),
    ...secretsEnvFor(name),
    ...options.env,
    ...extra,
  });

  const launch = (name: ServiceName, replica: number, extra?: Record<string, string>) =>
    new ManagedProcess({
      name: replicaName(name, replica),
      command: process.execPath,
      args: ['--enable-source-maps', builtEntry(name), ...(name === 'attempt-worker' ? ['--local'] : [])],
      logFile: join(options.dataDir, 'logs', `${replicaName(name, replica)}.log`),
      env: envFor(name, replica, extra),
      cwd: WORKSPACE_ROOT,
    });

  const replicas = Object.fromEntries(SERVICE_NAMES.map((name) => [name, []])) as unknown as Record<ServiceName, ManagedProcess[]>;
  // The first replica of each, read through: a restarted replica is seen at once.
  const processes = Object.defineProperties(
    {},
    Object.fromEntries(SERVICE_NAMES.map((name) => [name, { get: () => replicas[name][0], enumerable: true }])),
  ) as Record<ServiceName, ManagedProcess>;
  const stop = async () => {
    // The gateways first, so that no request reaches a service that is going away; then the
    // workers, whose stop still calls the services (the attempt-worker's farewell to the
    // placement-service): stopped beside them, it waited out its 10 s grace on every stack.
    await Promise.all(replicas.gateway.map((process_) => process_.stop()));
    await Promise.all([...replicas['attempt-worker'], ...replicas['workflow-worker']].map((process_) => process_.stop()));
    await Promise.all(Object.values(replicas).flat().map((process_) => process_.stop()));
  };
  // Every replica of every service started (in place of any before it), then each ready.
  const launchAll = async () => {
    for (const name of SERVICE_NAMES) {
      for (let replica = 0; replica < replicaCount; replica++) replicas[name][replica] = launch(name, replica);
    }
    await Promise.all(
      SERVICE_NAMES.flatMap((name) =>
        replicas[name].map((process_, replica) => waitForReady(replicaName(name, replica), replicaUrls[name][replica]!, process_)),
      ),
    );
  };
  try {
    await launchAll();
  } catch (error) {
    await stop();
    throw error;
  }
  const running: RunningServices = {
    ports: allPorts,
    gatewayUrl: urls.gateway,
    gatewayMetricsUrls: gatewayMetricsPorts.map((port) => `http://127.0.0.1:${port}`),
    poolGateUrl,
    urls,
    processes,
    replicaUrls,
    replicas,
    databases,
    resolverCredential,
    internalCredential,
    deploymentsTaskQueue,
    restart: async (name, env, replica = 0) => {
      if (!replicas[name][replica]) throw new Error(`${name} has no replica ${replica}`);
      await replicas[name][replica].stop();
      replicas[name][replica] = launch(name, replica, env);
      await waitForReady(replicaName(name, replica), replicaUrls[name][replica]!, replicas[name][replica]);
    },
    restartAll: async () => {
      await stop();
      await launchAll();
    },
    setCredentials: (newConnections, internalCredentials) => {
      connections = newConnections;
      internalCredential = internalCredentials.INTERNAL_CREDENTIAL;
      resolverCredential = internalCredentials.RESOLVER_CREDENTIAL;
      running.internalCredential = internalCredential;
      running.resolverCredential = resolverCredential;
    },
    stop,
  };
  return running;
}
