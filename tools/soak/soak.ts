// `npm run soak -- [--minutes N] [--baseline-minutes B] [--profile embedded|cluster] [--seed S] [--report FILE]`:
// a stack of its own under a steady mixed load through the gateway while a seeded injector
// kills (-9) and pauses its processes and cuts or slows its pool workers' network; then,
// once the load stopped and the stack settled,
// the invariants checked from the stores (docs/design.md#quality-bars). With
// `--baseline-minutes B` the same load runs B minutes without faults first, on the same
// stack, and the report sets the operations' rates side by side. Prints a report and writes
// it to docs/reliability.md (or FILE); exits 1 when an invariant is broken.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { MongoClient } from 'mongodb';
import { Client, Connection } from '@temporalio/client';
import { ATTEMPT_QUEUE_PREFIX, attemptQueueKeyName, LOCAL_ATTEMPT_QUEUE, tenantAttemptQueue } from '@envengine/attempt-queues';
import { issueToken, stackProcesses, startStack, superviseStack, withTokenStore, WORKSPACE_ROOT, STACK_PROFILES, type StackProfile, type SupervisedProcess } from '@envengine/dev-stack';
import { connectRedis, everyRedisKey } from '@envengine/redis-connections';
import { PoolCredentialIssued } from '@envengine/contracts';
import {
  acknowledgedWritesPresent,
  ApiClient,
  attemptsNeverOverlap,
  deletedEnvironmentsGone,
  deploymentsSettled,
  materializationsBacked,
  oneRunPerTick,
  queuesMatchAttempts,
  runsEndedOnce,
  stackInfoOf,
  startPoolWorker,
  type EngineStores,
  type InvariantResult,
  type PoolWorker,
} from '@envengine/test-harness';
import { FaultInjector, type FaultRecord, type NetworkLink } from './fault-injector.ts';
import { LoopbackProxy } from './loopback-proxy.ts';
import { SeededRandom } from './seeded-random.ts';
import { SoakLedger, TenantLoad } from './soak-load.ts';
import { workResumedAfter, type WorkResumed } from './work-resumed.ts';
import { AttemptSampler } from './attempt-sampler.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '2' },
    'baseline-minutes': { type: 'string', default: '0' },
    profile: { type: 'string', default: 'embedded' },
    seed: { type: 'string' },
    report: { type: 'string', default: join(WORKSPACE_ROOT, 'docs', 'reliability.md') },
  },
});
const minutes = Number(values.minutes);
if (!(minutes > 0)) throw new Error(`--minutes must be a positive number (got "${values.minutes}")`);
const baselineMinutes = Number(values['baseline-minutes']);
if (!(baselineMinutes >= 0)) throw new Error(`--baseline-minutes must be 0 or more (got "${values['baseline-minutes']}")`);
if (!(STACK_PROFILES as readonly string[]).includes(values.profile)) throw new Error(`--profile must be embedded or cluster (got "${values.profile}")`);
const profile = values.profile as StackProfile;
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer (got "${values.seed}")`);

const TENANTS = 2;
const ACTORS_PER_TENANT = 3;
/** After the load: how long the stack may take to end every run and ingest. */
const SETTLE_LIMIT_MS = 5 * 60_000;

const report = (line: string) => console.error(`soak: ${line}`);
report(`seed ${seed} (again: npm run soak -- --seed ${seed} --minutes ${minutes} --profile ${profile})`);
const dataDir = mkdtempSync(join(tmpdir(), 'envengine-soak-'));
const stack = await startStack({
  profile,
  dataDir,
  report,
  ports: 'random',
  temporalHeadless: true,
  env: { RATE_LIMIT_PER_SECOND: '10000000', RATE_LIMIT_BURST: '10000000' },
});
const info = stackInfoOf(stack, dataDir);
const supervisor = superviseStack(stack, { report, backoff: { initialMs: 250, maxMs: 4_000 } });
const poolWorkers: PoolWorker[] = [];
const openProxies: LoopbackProxy[] = [];
let exitCode = 1;
try {
  const random = new SeededRandom(seed);
  const ledger = new SoakLedger();
  const tenants = await Promise.all(
    Array.from({ length: TENANTS }, async (_, index) => {
      const { tenant, token } = await withTokenStore(info.mongoUrl, info.databases.gateway, (tokens) => issueToken(tokens, `soak-${index}`, 'soak'));
      const api = new ApiClient(`${info.gatewayUrl}/api/v1`, token.token);
      return { id: tenant.id, api, load: new TenantLoad(tenant.id, api, new SeededRandom(seed + index + 1), ledger, join(dataDir, 'lake', tenant.id)) };
    }),
  );
  // Each tenant's pool: a worker from the installable package, supervised like the stack's
  // processes, and a target of the faults like them.
  // Its network to the engine goes through loopback proxies (the gateway, and the pool gate
  // its credential names as its Redis), which the faults may cut or slow.
  const targets = stackProcesses(stack);
  const links = new Map<string, NetworkLink>();
  /** A pool worker's target name → its tenant (a fault of it stops that tenant's remote work only). */
  const tenantOfWorker = new Map<string, string>();
  for (const tenant of tenants) {
    const issued = await tenant.api.post('/pool/credentials', {});
    if (issued.status !== 201) throw new Error(`issuing a pool credential answered ${issued.status}: ${issued.text}`);
    const gateway = new URL(info.gatewayUrl);
    const proxies = [await LoopbackProxy.start({ host: gateway.hostname, port: Number(gateway.port) })];
    const network: Record<string, string> = { API_URL: `http://127.0.0.1:${proxies[0]!.port}` };
    const poolGate = new URL(PoolCredentialIssued.parse(issued.body.data).redis.url ?? info.poolGateUrl);
    proxies.push(await LoopbackProxy.start({ host: poolGate.hostname, port: Number(poolGate.port) }));
    poolGate.hostname = '127.0.0.1';
    poolGate.port = String(proxies[1]!.port);
    network['REDIS_URL'] = poolGate.toString();
    openProxies.push(...proxies);
    const worker = await startPoolWorker(info, issued.body.data, `soak-${tenant.id.slice(-6)}`, network);
    poolWorkers.push(worker);
    const target: SupervisedProcess = { process: worker.process, ready: async () => (await fetch(`${worker.healthUrl}/readyz`)).status === 200 };
    supervisor.watch(`pool-worker-${worker.name}`, target);
    targets.set(`pool-worker-${worker.name}`, target);
    links.set(`pool-worker-${worker.name}`, { proxies, worker: target });
    tenantOfWorker.set(`pool-worker-${worker.name}`, tenant.id);
  }
  const faults = new FaultInjector(() => targets, random, report, links);

  let baseline: Baseline | null = null;
  if (baselineMinutes > 0) {
    report(`load for ${baselineMinutes} min without faults (the baseline)`);
    const stopBaseline = new AbortController();
    const started = performance.now();
    const loads = Promise.all(tenants.map((tenant) => tenant.load.run(ACTORS_PER_TENANT, stopBaseline.signal)));
    await new Promise((resolve) => setTimeout(resolve, baselineMinutes * 60_000));
    stopBaseline.abort();
    await loads;
    baseline = { seconds: (performance.now() - started) / 1000, outcomes: new Map(ledger.outcomes) };
    ledger.outcomes.clear();
  }
  report(`load for ${minutes} min: ${TENANTS} tenants × ${ACTORS_PER_TENANT} actors; faults among ${targets.size} processes`);
  const stopLoad = new AbortController();
  const loadStarted = performance.now();
  // The attempts as they run (an environment's delete removes its own from the stores).
  const samplerClient = await MongoClient.connect(info.mongoUrl, { serverSelectionTimeoutMS: 5_000 });
  const sampler = new AttemptSampler(samplerClient.db(info.databases['placement-service']).collection('attempts'));
  sampler.start(2_000);
  const loads = Promise.all(tenants.map((tenant) => tenant.load.run(ACTORS_PER_TENANT, stopLoad.signal)));
  const injected = faults.run(stopLoad.signal);
  await new Promise((resolve) => setTimeout(resolve, minutes * 60_000));
  stopLoad.abort();
  await Promise.all([loads, injected]);
  await sampler.stop();
  await samplerClient.close();
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  const loadEndedAt = Date.now();
  report(`load stopped after ${loadSeconds.toFixed(0)} s; ${faults.faults.length} faults; settling`);

  const mongo = await MongoClient.connect(info.mongoUrl);
  try {
    const stores: EngineStores = {
      placement: mongo.db(info.databases['placement-service']),
      deployment: mongo.db(info.databases['deployment-service']),
      secrets: mongo.db(info.databases['secrets-service']),
    };
    // No more ticks: every environment's schedules paused, so that the runs can all end.
    for (const tenant of tenants) {
      const listed = await tenant.api.get('/environments');
      for (const environment of listed.body.data as Array<{ name: string }>) await tenant.api.post(`/environments/${environment.name}/schedules/pause`, {});
    }
    const settled = await settle(stores, tenants.map((tenant) => tenant.id));
    report(settled ? 'settled' : `not settled within ${SETTLE_LIMIT_MS / 60_000} min; checking anyway`);
    // A DELETE answered 503, or not at all, may still have torn the environment down: asked now.
    for (const [id, { tenantId, name }] of ledger.deleteRequested) {
      if (ledger.deleted.has(id)) continue;
      const answer = await tenants.find((tenant) => tenant.id === tenantId)!.api.get(`/environments/${name}`);
      if (answer.status === 404 || (answer.status === 200 && answer.body.data.id !== id)) ledger.deleted.add(id);
    }
    const results = await checkInvariants(stores, ledger, tenants.map((tenant) => tenant.id));
    const resumed = workResumedAfter(
      faults.faults.map((fault) => ({ at: fault.at.getTime(), target: fault.target, tenantId: tenantOfWorker.get(fault.target) })),
      ledger.timeline,
      await sampler.withCurrent(stores.placement.collection('attempts')),
      loadEndedAt,
    );
    const text = reportOf(results, ledger, faults.faults, resumed, loadSeconds, baseline);
    console.log(text);
    writeFileSync(values.report, `${text}\n`);
    report(`report written to ${values.report}`);
    exitCode = results.every((entry) => entry.held) ? 0 : 1;
  } finally {
    await mongo.close();
  }
} finally {
  await supervisor.stop();
  for (const worker of poolWorkers) await worker.process.stop();
  for (const proxy of openProxies) await proxy.close();
  await stack.stop();
}
// Kept when something broke (every process's log is under logs/), or when asked.
if (exitCode === 0 && !process.env.KEEP_TEST_DATA) rmSync(dataDir, { recursive: true, force: true });
else report(`the stack's data and logs are kept in ${dataDir}`);
process.exit(exitCode);

/**
 * Until no run or attempt is queued or running, no deployment is mid-ingest, and the
 * queues hold no job of an ended attempt (a killed worker's job stays active until
 * BullMQ's stalled-job check hands it on and the start is refused): evidence, polled, or the limit.
 */
async function settle(stores: EngineStores, tenantIds: string[]): Promise<boolean> {
  const { placement, deployment } = stores;
  const started = Date.now();
  while (Date.now() - started < SETTLE_LIMIT_MS) {
    const [runs, attempts, ingests] = await Promise.all([
      placement.collection('runs').countDocuments({ status: { $in: ['queued', 'running'] } }),
      placement.collection('attempts').countDocuments({ status: { $in: ['queued', 'running'] } }),
      deployment.collection('deployments').countDocuments({ status: { $nin: ['ready', 'failed'] } }),
    ]);
    if (runs + attempts + ingests === 0 && (await openIngests()) === 0 && (await queuesMatchAttempts(stores, await queuedJobs(tenantIds))).held) return true;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return false;
}

async function openIngests(): Promise<number> {
  const connection = await Connection.connect({ address: info.temporalAddress });
  try {
    const client = new Client({ connection });
    let open = 0;
    for await (const _ of client.workflow.list({ query: `WorkflowType = 'ingestDeployment' AND ExecutionStatus = 'Running'` })) open += 1;
    return open;
  } finally {
    await connection.close();
  }
}

/** Every key name in Redis (each master's, on a Redis Cluster). */
async function redisKeyNames(): Promise<string[]> {
  const connection = connectRedis(info.redisUrl, { maxRetriesPerRequest: 3 });
  const names: string[] = [];
  try {
    for await (const { key } of everyRedisKey(connection)) names.push(key);
  } finally {
    connection.disconnect();
  }
  return names;
}

/** The files left under each storage prefix an environment's delete was asked to purge. */
function filesUnder(directories: ReadonlyMap<string, string>): Map<string, string[]> {
  const left = new Map<string, string[]>();
  for (const [id, directory] of directories) {
    const files = existsSync(directory) ? readdirSync(directory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name)) : [];
    left.set(id, files);
  }
  return left;
}

/** The attempt queues' jobs not yet finished, by attempt id → where. */
async function queuedJobs(tenantIds: string[]): Promise<Map<string, string>> {
  const connection = connectRedis(info.redisUrl, { maxRetriesPerRequest: 3 });
  const jobs = new Map<string, string>();
  try {
    for (const name of [LOCAL_ATTEMPT_QUEUE, ...tenantIds.map(tenantAttemptQueue)]) {
      const queue = new Queue(attemptQueueKeyName(name), { connection, prefix: ATTEMPT_QUEUE_PREFIX });
      for (const state of ['wait', 'active', 'delayed', 'prioritized'] as const) {
        for (const job of await queue.getJobs([state])) if (job?.data?.attempt_id) jobs.set(job.data.attempt_id as string, `${name} (${state})`);
      }
      await queue.close();
    }
  } finally {
    connection.disconnect();
  }
  return jobs;
}

async function checkInvariants(stores: EngineStores, ledger: SoakLedger, tenantIds: string[]): Promise<InvariantResult[]> {
  const results = [
    await runsEndedOnce(stores),
    await attemptsNeverOverlap(stores),
    await acknowledgedWritesPresent(stores, ledger.writes, ledger.deleted),
    await deploymentsSettled(stores),
    {
      name: 'ingests-closed',
      rule: 'no ingest workflow is still open in Temporal',
      checked: 1,
      ...(await openIngests().then((open) => ({ held: open === 0, offenders: open === 0 ? [] : [`${open} ingest workflows still running`] }))),
    },
    await materializationsBacked(stores),
    await queuesMatchAttempts(stores, await queuedJobs(tenantIds)),
    {
      name: 'replays-answered-first',
      rule: 'every replayed Idempotency-Key got the first answer',
      checked: ledger.replays,
      held: ledger.replayMismatches.length === 0,
      offenders: ledger.replayMismatches.slice(0, 20),
    },
    await oneRunPerTick(stores),
    await deletedEnvironmentsGone(stores, ledger.deleted, {}, { redisKeys: await redisKeyNames(), purgedPrefixFiles: filesUnder(ledger.purgeRequested) }),
    {
      name: 'no-internal-errors',
      rule: 'no answer was a 500 or off the OpenAPI document (a fault ends in a clear error)',
      checked: [...ledger.outcomes.values()].reduce((sum, count) => sum + count, 0),
      held: ledger.internalErrors.length === 0,
      offenders: ledger.internalErrors.slice(0, 20),
    },
  ];
  return results;
}

/** The load's answers in its first phase, without faults. */
interface Baseline {
  seconds: number;
  outcomes: Map<string, number>;
}

/** Answers 2xx of one operation in `outcomes` (`<operation> <status>` → count). */
function acknowledged(outcomes: Map<string, number>, operation: string): number {
  return [...outcomes].filter(([key]) => key.startsWith(`${operation} 2`)).reduce((sum, [, count]) => sum + count, 0);
}

/** `p50 / max` of the times, with how many never came (NaN). */
function spread(times: number[]): string {
  const back = times.filter((ms) => !Number.isNaN(ms)).sort((a, b) => a - b);
  const summary = back.length === 0 ? '–' : `${back[Math.floor((back.length - 1) / 2)]!.toFixed(0)} / ${back.at(-1)!.toFixed(0)}`;
  return `${summary}${back.length < times.length ? ` (${times.length - back.length} never)` : ''}`;
}

function reportOf(results: InvariantResult[], ledger: SoakLedger, faults: FaultRecord[], resumed: WorkResumed[], loadSeconds: number, baseline: Baseline | null): string {
  const byKind = new Map<string, Array<{ serving: number; working: number }>>();
  faults.forEach((fault, index) => {
    const key = `${fault.kind} ${fault.target}`;
    byKind.set(key, [...(byKind.get(key) ?? []), { serving: fault.recoveredMs ?? Number.NaN, working: resumed[index]!.resumedAfterMs ?? Number.NaN }]);
  });
  const resumedText = (entry: WorkResumed) =>
    [
      entry.runsResumedAfterMs === undefined ? 'no runs of its executor under way' : `runs after ${entry.runsResumedAfterMs === null ? 'never' : `${entry.runsResumedAfterMs.toFixed(0)} ms`}`,
      ...entry.api.map((api) => `${api.operation} after ${api.resumedAfterMs === null ? 'never' : `${api.resumedAfterMs.toFixed(0)} ms`}`),
    ].join(', ');
  const operations = new Map<string, Map<string, number>>();
  for (const [key, count] of ledger.outcomes) {
    const [operation, outcome] = [key.slice(0, key.indexOf(' ')), key.slice(key.indexOf(' ') + 1)];
    operations.set(operation, (operations.get(operation) ?? new Map()).set(outcome, count));
  }
  return [
    '# Reliability: the soak',
    '',
    `\`npm run soak -- --seed ${seed} --minutes ${minutes} --profile ${profile}\` on ${new Date().toISOString().slice(0, 10)}: Node ${process.version}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; ${loadSeconds.toFixed(0)} s of load by ${TENANTS} tenants × ${ACTORS_PER_TENANT} actors through the gateway, ${faults.length} faults.`,
    '',
    '## Invariants (from the stores, after the stack settled)',
    '',
    '| invariant | rule | checked | held | offenders |',
    '|---|---|---:|---|---|',
    ...results.map((entry) => `| ${entry.name} | ${entry.rule} | ${entry.checked} | ${entry.held ? 'yes' : '**no**'} | ${entry.offenders.join('; ').replaceAll('|', '\\|') || '—'} |`),
    '',
    '## Faults (one at a time)',
    '',
    'Serving again: the process answers its readiness probe. Work resumed: every kind of request that failed after the fault succeeded again, and the first attempt of the work it could stop (on its executor, and a pool worker\'s tenant; under way at the fault or offered after it) finished successfully; the later of the two.',
    '',
    '| fault | times | serving again after, p50 / max ms | work resumed after, p50 / max ms |',
    '|---|---:|---:|---:|',
    ...[...byKind].sort().map(([kind, times]) => `| ${kind} | ${times.length} | ${spread(times.map((time) => time.serving))} | ${spread(times.map((time) => time.working))} |`),
    '',
    'Each fault with its time:',
    '',
    ...faults.map(
      (fault, index) =>
        `- ${fault.at.toISOString()} ${fault.kind} ${fault.target} (pid ${fault.pid}): ${fault.recoveredMs === null ? 'not back' : `serving again after ${fault.recoveredMs.toFixed(0)} ms`}; work resumed: ${resumedText(resumed[index]!)}`,
    ),
    '',
    '## Operations by answer',
    '',
    '| operation | answers (status: count) | per second |',
    '|---|---|---:|',
    ...[...operations].sort().map(([operation, outcomes]) => {
      const total = [...outcomes.values()].reduce((sum, count) => sum + count, 0);
      return `| ${operation} | ${[...outcomes].sort().map(([outcome, count]) => `${outcome}: ${count}`).join(', ')} | ${(total / loadSeconds).toFixed(2)} |`;
    }),
    ...(baseline === null
      ? []
      : [
          '',
          `## Against the same load without faults (the first ${baseline.seconds.toFixed(0)} s, same stack)`,
          '',
          '| operation | 2xx per second, no faults | 2xx per second, with faults | ratio |',
          '|---|---:|---:|---:|',
          ...[...operations.keys()].sort().map((operation) => {
            const calm = acknowledged(baseline.outcomes, operation) / baseline.seconds;
            const faulted = acknowledged(ledger.outcomes, operation) / loadSeconds;
            return `| ${operation} | ${calm.toFixed(2)} | ${faulted.toFixed(2)} | ${calm > 0 ? `${(faulted / calm).toFixed(2)}x` : '–'} |`;
          }),
        ]),
  ].join('\n');
}
