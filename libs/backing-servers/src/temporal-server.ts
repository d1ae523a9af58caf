import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { binaryCacheRoot, pathOrGoBuild, type Reporter } from './binaries.ts';
import { ServerUnavailableError, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { freePort, waitUntil } from './network.ts';

export interface StartTemporalOptions {
  /** Use this frontend (`host:port`, TEMPORAL_ADDRESS) instead of starting one. */
  address?: string;
  dataDir: string;
  port?: number;
  /** Port of the web UI; a free one when omitted, none when `headless`. */
  uiPort?: number;
  headless?: boolean;
  namespace?: string;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

/**
 * The dev server throttles itself by default: one history shard whose task readers poll at
 * most 20 times a second (`history.*ProcessorMaxPollRPS`), so every workflow task and
 * activity dispatch waits about 50 ms, and timers under a second are shifted to about a
 * second (`history.timerProcessorMaxTimeShift`). Raising the poll rates, a 10 ms shift, one
 * task-queue partition (no forwarding between partitions), eager activity execution, and
 * SQLite in WAL mode with `synchronous=normal` take a no-op workflow from about 650 ms to
 * about 120 ms here. Schedules may start 30 workflows a second per namespace by default
 * (`worker.schedulerNamespaceStartWorkflowRPS`): 500 schedules due in the same minute queue
 * up behind that for 17 s and past their catch-up window, so it is raised. The same flags
 * are in docker-compose.yml.
 */
export const TEMPORAL_TUNING: Record<string, number | string | boolean | Record<string, number>> = {
  'history.transferProcessorMaxPollRPS': 10000,
  'history.timerProcessorMaxPollRPS': 10000,
  'history.visibilityProcessorMaxPollRPS': 10000,
  'history.outboundProcessorMaxPollRPS': 10000,
  'history.timerProcessorMaxTimeShift': '10ms',
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  'system.enableActivityEagerExecution': true,
  'worker.schedulerNamespaceStartWorkflowRPS': 1000,
  // Schedules are workflows of Temporal's own per-namespace worker, which polls for their
  // tasks with two pollers by default: 500 schedules due in the same second wait on them.
  'worker.perNamespaceWorkerOptions': { MaxConcurrentWorkflowTaskPollers: 16 },
};

/** The dev server's flags: SQLite's, then `TEMPORAL_TUNING` as dynamic config values (JSON). */
export const DEV_SERVER_TUNING = [
  '--sqlite-pragma', 'journal_mode=wal',
  '--sqlite-pragma', 'synchronous=normal',
  ...Object.entries(TEMPORAL_TUNING).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]),
];

/** The search attributes the workflows set (`SEARCH_ATTRIBUTES` in deployment-workflows), registered at start, all Keyword. */
export const SEARCH_ATTRIBUTE_NAMES = ['EnvengineTenantId', 'EnvengineEnvironment', 'EnvengineEnvironmentId', 'EnvengineDeploymentId', 'EnvengineIngestOutcome'] as const;
export const SEARCH_ATTRIBUTE_FLAGS = SEARCH_ATTRIBUTE_NAMES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]);

/** Whether the frontend at `address` answers for `namespace` (it may be listening before it does). */
export async function temporalAnswers(address: string, namespace: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 1000 });
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } finally {
    await connection.close();
  }
}

/** The `temporal` CLI from PATH, else the pinned Go build from the per-user cache (built once); with where it came from. */
export function temporalBinary(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<{ path: string; source: BackingServer['source'] } | undefined> {
  return pathOrGoBuild('temporal', report, env);
}

/** Temporal dev server: TEMPORAL_ADDRESS, then `temporal` on PATH, then the CLI built with Go. */
export async function startTemporal(options: StartTemporalOptions): Promise<BackingServer> {
  const env = options.env ?? process.env;
  const namespace = options.namespace ?? 'default';
  if (options.address) {
    await waitUntil('Temporal at TEMPORAL_ADDRESS', () => temporalAnswers(options.address!, namespace), { timeoutMs: 30_000 });
    return { name: 'temporal', url: options.address, adminUrl: options.address, source: 'url', links: {}, stop: async () => undefined };
  }
  const binary = await temporalBinary(options.report, env);
  if (!binary) {
    throw new ServerUnavailableError(
      'Temporal server',
      `Set TEMPORAL_ADDRESS to a running Temporal frontend, put the temporal CLI on PATH, or install Go (apt-get install golang-go) so that the CLI v1.5.1 can be built into ${binaryCacheRoot(env)}.`,
    );
  }
  const port = options.port ?? (await freePort());
  const httpPort = await freePort();
  const metricsPort = await freePort();
  const uiPort = options.headless ? undefined : (options.uiPort ?? (await freePort()));
  const dir = join(options.dataDir, 'temporal');
  mkdirSync(dir, { recursive: true });
  const logFile = join(options.dataDir, 'logs', 'temporal.log');
  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(port),
    '--http-port', String(httpPort),
    '--metrics-port', String(metricsPort),
    '--db-filename', join(dir, 'temporal.db'),
    '--namespace', namespace,
    '--log-level', 'warn',
  ];
  args.push(...DEV_SERVER_TUNING, ...SEARCH_ATTRIBUTE_FLAGS);
  if (uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  const process_ = new ManagedProcess({ name: 'temporal', command: binary.path, args, logFile });
  const address = `127.0.0.1:${port}`;
  await waitUntil('temporal server', () => temporalAnswers(address, namespace), {
    timeoutMs: 60_000,
    alive: () => process_.running,
    logFile,
  });
  return {
    name: 'temporal',
    url: address,
    adminUrl: address,
    source: binary.source,
    process: process_,
    links: uiPort === undefined ? {} : { 'Temporal UI': `http://127.0.0.1:${uiPort}` },
    stop: () => process_.stop(),
  };
}
