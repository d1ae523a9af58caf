import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { binaryCacheRoot, ensureGoBuild, PINNED_GO_BUILDS, type Reporter } from './binaries.ts';
import { ServerUnavailableError, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { canConnect, freePortInRange, waitUntil } from './network.ts';
import { startPostgres, type PostgresServer } from './postgres-server.ts';
import { SEARCH_ATTRIBUTE_NAMES, TEMPORAL_TUNING } from './temporal-server.ts';

/** The services of a Temporal cluster, each its own process here, as in production. */
export const TEMPORAL_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

/** PostgreSQL's one role, Temporal's. */
const POSTGRES_ROLE = 'temporal';

/** Fixed at the cluster's creation, as in production (a cluster cannot change it later). */
export const TEMPORAL_HISTORY_SHARDS = 4;

/** The databases Temporal's SQL tool makes, each with the schema directory it applies. */
const TEMPORAL_DATABASES = [
  { name: 'temporal', schema: 'temporal' },
  { name: 'temporal_visibility', schema: 'visibility' },
] as const;

/** Every ordinary port of the cluster under `npm start` (the dev server's frontend and UI ports, Temporal's defaults for the rest). */
export const TEMPORAL_CLUSTER_DEFAULT_PORTS = {
  postgres: 5433,
  frontend: { grpc: 7233, membership: 6933, http: 7243 },
  history: { grpc: 7234, membership: 6934 },
  matching: { grpc: 7235, membership: 6935 },
  worker: { grpc: 7239, membership: 6939 },
  ui: 8233,
} as const;

type ClusterPorts = {
  postgres: number;
  ui: number;
} & { [S in TemporalService]: { grpc: number; membership: number; http?: number } };

export interface StartTemporalClusterOptions {
  dataDir: string;
  /** Fixed ports (`npm start`) or free ones (tests). */
  ports: 'default' | 'random';
  /** PostgreSQL's role for Temporal (`temporal`) and its password, from the data directory's credentials. */
  postgresPassword: string;
  headless?: boolean;
  namespace?: string;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

export interface TemporalClusterServer extends BackingServer {
  /** The cluster's parts, to kill or restart one (tests of failover) and to supervise each. */
  parts: { name: string; process: ManagedProcess; address: string }[];
  postgres: PostgresServer;
}

async function clusterPorts(fixed: boolean): Promise<ClusterPorts> {
  if (fixed) return structuredClone(TEMPORAL_CLUSTER_DEFAULT_PORTS) as ClusterPorts;
  // Temporal stores its members' ports as a PostgreSQL smallint: below Linux's ephemeral range.
  const taken = new Set<number>();
  const port = async (): Promise<number> => {
    const found = await freePortInRange(20_000, 32_767);
    if (taken.has(found)) return port();
    taken.add(found);
    return found;
  };
  return {
    postgres: await port(),
    ui: await port(),
    frontend: { grpc: await port(), membership: await port(), http: await port() },
    history: { grpc: await port(), membership: await port() },
    matching: { grpc: await port(), membership: await port() },
    worker: { grpc: await port(), membership: await port() },
  };
}

/**
 * The server's configuration. It is a template (`enable-template`): the database password
 * comes from each process's environment, so no file holds it.
 */
function clusterConfig(ports: ClusterPorts, dynamicConfigFile: string): string {
  const store = (database: string, maxConns: number) => `      sql:
        pluginName: postgres12
        databaseName: ${database}
        connectAddr: "127.0.0.1:${ports.postgres}"
        connectProtocol: tcp
        user: ${POSTGRES_ROLE}
        password: {{ env "TEMPORAL_POSTGRES_PASSWORD" | quote }}
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: 1h`;
  const service = (name: TemporalService) => {
    const { grpc, membership, http } = ports[name];
    return `  ${name}:
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${http ? `\n      httpPort: ${http}` : ''}`;
  };
  return `# enable-template
# Written by envengine at each start of the cluster profile's Temporal.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${TEMPORAL_HISTORY_SHARDS}
  datastores:
    default:
${store('temporal', 20)}
    visibility:
${store('temporal_visibility', 10)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
${TEMPORAL_SERVICES.map(service).join('\n')}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:${ports.frontend.grpc}
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${JSON.stringify(dynamicConfigFile)}
  pollInterval: 10s
`;
}

/** `TEMPORAL_TUNING` in the file form of dynamic config: the same values as the dev server's flags. */
function dynamicConfig(): string {
  return Object.entries(TEMPORAL_TUNING)
    .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n    constraints: {}\n`)
    .join('');
}

/** Makes each database and applies Temporal's versioned schema to it (a no-op when it is current). */
function setUpSchemas(sqlTool: string, schemaRoot: string, postgres: PostgresServer, password: string, markerDir: string): void {
  const env = { ...process.env, SQL_PASSWORD: password };
  const run = (database: string, args: string[]) => {
    const result = spawnSync(
      sqlTool,
      ['--plugin', 'postgres12', '--ep', postgres.host, '--port', String(postgres.port), '--user', postgres.user, '--db', database, ...args],
      { env, encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`temporal-sql-tool ${args[0]} on ${database} failed (exit ${result.status}): ${result.stderr || result.stdout}`);
  };
  for (const { name, schema } of TEMPORAL_DATABASES) {
    const marker = join(markerDir, `schema-${name}`);
    if (!existsSync(marker)) {
      run(name, ['create-database']);
      run(name, ['setup-schema', '-v', '0.0']);
      writeFileSync(marker, 'created\n');
    }
    run(name, ['update-schema', '-d', join(schemaRoot, schema, 'versioned')]);
  }
}

/** Registers the namespace (three days' retention) and the workflows' search attributes, unless there. */
async function registerNamespace(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: 2000 });
  try {
    await connection.workflowService
      .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') })
      .catch((error: { code?: number }) => {
        if (error.code !== 6) throw error; // ALREADY_EXISTS: a restart
      });
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = SEARCH_ATTRIBUTE_NAMES.filter((name) => !customAttributes?.[name]);
    if (missing.length > 0) {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map((name) => [name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
      });
    }
  } finally {
    await connection.close();
  }
}

/** Whether a workflow can be started in the namespace yet: the frontend's namespace cache refreshes on a timer. */
async function namespaceUsable(address: string, namespace: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 1000 });
  try {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    if (!SEARCH_ATTRIBUTE_NAMES.every((name) => customAttributes?.[name])) return false;
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } finally {
    await connection.close();
  }
}

/**
 * The cluster profile's Temporal: the server built with Go at the CLI's version, on
 * PostgreSQL with four history shards, its frontend, history, matching and worker services
 * each a process of its own, and the Temporal UI server in front of the frontend.
 */
export async function startTemporalCluster(options: StartTemporalClusterOptions): Promise<TemporalClusterServer> {
  const env = options.env ?? process.env;
  const namespace = options.namespace ?? 'default';
  const server = await ensureGoBuild('temporal-server', options.report, env);
  const ui = options.headless ? undefined : await ensureGoBuild('temporal-ui-server', options.report, env);
  if (!server || (!options.headless && !ui)) {
    throw new ServerUnavailableError(
      'Temporal cluster',
      `Install Go (apt-get install golang-go) so that Temporal server ${PINNED_GO_BUILDS['temporal-server'].version} and its UI can be built into ${binaryCacheRoot(env)}.`,
    );
  }
  const buildDir = join(server, '..');
  const ports = await clusterPorts(options.ports === 'default');
  const root = join(options.dataDir, 'temporal-cluster');
  const configDir = join(root, 'config');
  mkdirSync(configDir, { recursive: true });
  const dynamicConfigFile = join(configDir, 'dynamic-config.yaml');
  writeFileSync(dynamicConfigFile, dynamicConfig());
  writeFileSync(join(configDir, 'cluster.yaml'), clusterConfig(ports, dynamicConfigFile));

  const postgres = await startPostgres({ dataDir: options.dataDir, port: ports.postgres, user: POSTGRES_ROLE, password: options.postgresPassword, report: options.report, env });
  const started: ManagedProcess[] = [postgres.process];
  const stopAll = async () => {
    // Temporal's services before the database they write to.
    for (const process_ of started.slice(1).reverse()) await process_.stop();
    await postgres.stop();
  };
  try {
    setUpSchemas(join(buildDir, 'temporal-sql-tool'), join(buildDir, 'schema/postgresql/v12'), postgres, options.postgresPassword, root);
    const parts: TemporalClusterServer['parts'] = [{ name: 'postgres', process: postgres.process, address: `${postgres.host}:${postgres.port}` }];
    const processEnv = { ...env, TEMPORAL_POSTGRES_PASSWORD: options.postgresPassword };
    const listening = (part: TemporalClusterServer['parts'][number]) =>
      waitUntil(part.name, () => canConnect('127.0.0.1', Number(part.address.split(':')[1]), 1000), {
        timeoutMs: 60_000,
        alive: () => part.process.running,
        logFile: part.process.logFile,
      });
    // The frontend first, alone: each service writes the cluster's metadata at its first
    // start, and four at once on a new database race on its key (one exits with
    // `duplicate key value violates unique constraint "cluster_metadata_info_pkey"`, seen in
    // 3 of 12 starts). The other three then together: each waits for the rest to join its ring.
    for (const service of TEMPORAL_SERVICES) {
      const process_ = new ManagedProcess({
        name: `temporal-${service}`,
        command: server,
        args: ['--root', root, '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start', '--service', service],
        logFile: join(options.dataDir, 'logs', `temporal-${service}.log`),
        env: processEnv,
      });
      started.push(process_);
      // The worker service serves no gRPC: its membership port is where it answers.
      const port = service === 'worker' ? ports.worker.membership : ports[service].grpc;
      parts.push({ name: `temporal-${service}`, process: process_, address: `127.0.0.1:${port}` });
      if (service === 'frontend') await listening(parts.at(-1)!);
    }
    for (const part of parts.slice(2)) await listening(part);
    const address = `127.0.0.1:${ports.frontend.grpc}`;
    const frontend = started[1]!;
    const frontendLog = join(options.dataDir, 'logs', 'temporal-frontend.log');
    // The frontend listens before the rest of the cluster has joined its ring: registering is retried until it is taken.
    await waitUntil('temporal namespace registration', () => registerNamespace(address, namespace).then(() => true), { timeoutMs: 60_000, alive: () => frontend.running, logFile: frontendLog });
    await waitUntil('temporal namespace', () => namespaceUsable(address, namespace), { timeoutMs: 60_000, alive: () => frontend.running, logFile: frontendLog });
    const links: Record<string, string> = {};
    if (ui) {
      writeFileSync(
        join(configDir, 'ui.yaml'),
        `temporalGrpcAddress: ${address}\nhost: 127.0.0.1\nport: ${ports.ui}\nenableUi: true\ndefaultNamespace: ${namespace}\nhideLogs: true\n`,
      );
      const logFile = join(options.dataDir, 'logs', 'temporal-ui.log');
      const process_ = new ManagedProcess({ name: 'temporal-ui', command: ui, args: ['--root', root, '--config', 'config', '--env', 'ui', 'start'], logFile });
      started.push(process_);
      parts.push({ name: 'temporal-ui', process: process_, address: `127.0.0.1:${ports.ui}` });
      await waitUntil('temporal ui', () => canConnect('127.0.0.1', ports.ui, 1000), { timeoutMs: 30_000, alive: () => process_.running, logFile });
      links['Temporal UI'] = `http://127.0.0.1:${ports.ui}`;
    }
    return {
      name: 'temporal',
      url: address,
      adminUrl: address,
      source: 'go-build',
      process: frontend,
      parts,
      postgres,
      links,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
