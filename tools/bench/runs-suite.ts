// Runs and attempts, on one stack and one Redis: an empty one-asset run created through the
// gateway and run by one pool worker (concurrency 10), against a bare BullMQ Queue + Worker
// with an empty job, with the OS sandbox and again with SANDBOX=off in the same run; runs
// per second; 1,000 runs queued with no worker, then drained (no loss, no duplicate); a
// 100,000-row ctx.emit against hyparquet-writer in this process.
import { fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { MongoClient } from 'mongodb';
import { connectRedis, type RedisConnection } from '@envengine/redis-connections';
import { ATTEMPT_QUEUE_PREFIX, attemptQueueKeyName } from '@envengine/attempt-queues';
import { PoolCredentialIssued, PoolStatus, Run, RunLogLine } from '@envengine/contracts';
import { ApiClient, deployProject, manifestOf, stackInfoOf, startPoolWorker, type PoolWorker } from '@envengine/test-harness';
import { cpuSecondsOf, endedChildrenCpuSecondsOf, machineBusyCpuSeconds, median, percentile, runConcurrently, stackProcessGroups, type Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';
import { EMIT_ROWS, encodeWideRows, loadMakeRows, ROWS_MODULE, WIDE_ASSET, WIDE_COLUMNS } from './wide-rows.ts';

const ENVIRONMENT = 'runs-bench';
const POOL_CONCURRENCY = 10;
const RUN_TIMEOUT_MS = 120_000;
const QUEUED_RUNS = 1_000;
const EMIT_REPEATS = 3;

function assetCode(counterUrl: string): Record<string, string> {
  return {
    'assets/empty.js': 'export default async () => {};',
    // Reports to the bench's counter (outside the engine's records) that its code ran, once per
    // execution: over the host's loopback, which the OS sandbox refuses, so the drain's worker runs with SANDBOX=off,
    // and the environment's egress is public for it (else Node's permission model refuses the network too).
    'assets/counted.js': `export default async (ctx) => {
      await fetch(${JSON.stringify(counterUrl)}, { method: 'POST', body: ctx.run.id + ' ' + ctx.run.attempt });
      ctx.log('counted');
    };`,
    'assets/rows.js': ROWS_MODULE,
    'assets/wide.js': WIDE_ASSET,
  };
}

/** Ends of BullMQ jobs by id, whichever comes first: the end, or the wait for it. */
class JobEnds {
  private readonly ends = new Map<string, { ended: Promise<void>; arrive: () => void }>();

  arrive(jobId: string | undefined): void {
    if (jobId !== undefined) this.entry(jobId).arrive();
  }

  /** True once the job ended; false after `timeoutMs`. */
  async wait(jobId: string, timeoutMs = RUN_TIMEOUT_MS): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const ended = await Promise.race([this.entry(jobId).ended.then(() => true as const), timedOut]);
    clearTimeout(timer);
    this.ends.delete(jobId);
    return ended;
  }

  private entry(jobId: string): { ended: Promise<void>; arrive: () => void } {
    let entry = this.ends.get(jobId);
    if (!entry) {
      let arrive!: () => void;
      const ended = new Promise<void>((resolve) => (arrive = resolve));
      entry = { ended, arrive };
      this.ends.set(jobId, entry);
    }
    return entry;
  }
}

interface LatencyRow {
  name: string;
  inFlight: number;
  count: number;
  latencies: number[];
  perSecond: number;
  failed: number;
}

/** One run as the bench saw it: when its POST was sent, and the run read back after its job ended. */
interface TimedRun {
  postedAt: number;
  run: Run | undefined;
}

const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) : Number.NaN);

export async function runsSuite(_bench: Bench, { stack, dataDir, token }: SuiteContext): Promise<string[]> {
  const { servers, services } = stack;
  const api = new ApiClient(`${services.gatewayUrl}/api/v1`, token);
  // BullMQ leaves connections it was given open: each is closed here at the end.
  const redisClients: RedisConnection[] = [];
  const redis = () => {
    const client = connectRedis(servers.redis.adminUrl, { maxRetriesPerRequest: null });
    redisClients.push(client);
    return client;
  };

  // Who ran the counted asset: "<run id> <attempt>" → executions, reported by the code itself.
  const executions = new Map<string, number>();
  const counter = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      executions.set(body, (executions.get(body) ?? 0) + 1);
      response.end();
    });
  });
  counter.listen(0, '127.0.0.1');
  await once(counter, 'listening');
  const counterUrl = `http://127.0.0.1:${(counter.address() as AddressInfo).port}/ran`;

  await deployProject(api, {
    environment: ENVIRONMENT,
    storagePrefix: `file://${join(dataDir, 'lake', 'runs')}`,
    executor: 'remote',
    bindings: { warehouse: {} },
    files: assetCode(counterUrl),
    manifest: { ...manifestOf([{ key: 'empty' }, { key: 'counted' }, { key: 'wide', columns: WIDE_COLUMNS }]), schedules: [] },
  });
  const issued = await api.post('/pool/credentials', { label: 'bench' });
  if (issued.status !== 201) throw new Error(`issuing a pool credential answered ${issued.status}`);
  const credential = PoolCredentialIssued.parse(issued.body.data);
  const stackInfo = stackInfoOf(stack, dataDir);
  // MongoDB's own count of the operations it served (every database): how many round trips a run costs.
  const mongo = await MongoClient.connect(stackInfo.mongoUrl);
  const mongoOps = async (): Promise<Record<string, number>> => {
    const status = (await mongo.db('admin').command({ serverStatus: 1 })) as { opcounters: Record<string, number> };
    return Object.fromEntries(Object.entries(status.opcounters).map(([name, value]) => [name, Number(value)]));
  };
  /** MongoDB operations per run, by kind, at each measured concurrency (sandboxed rows). */
  const opsPerRun: Array<{ inFlight: number; ops: Record<string, number> }> = [];
  // The pool worker as docs/api.md#worker-pools starts one, with the product's heartbeat interval.
  const startWorker = (name: string, sandbox: 'bwrap' | 'off') =>
    startPoolWorker(stackInfo, credential, name, {
      CONCURRENCY: String(POOL_CONCURRENCY),
      HEARTBEAT_INTERVAL_MS: '2000',
      ASSET_TIMEOUT_MS: '120000',
      SANDBOX: sandbox,
      // `ASSET_CGROUPS=off npm run bench -- --suite runs` measures the workers without a cgroup per asset (the run before them).
      ...(process.env.ASSET_CGROUPS ? { ASSET_CGROUPS: process.env.ASSET_CGROUPS } : {}),
    });

  // A run's end, pushed by BullMQ's event stream on the pool's queue (the attempt's job id is its id): no polling.
  const attemptEnds = new JobEnds();
  const poolEvents = new QueueEvents(attemptQueueKeyName(credential.queue), { connection: redis(), prefix: ATTEMPT_QUEUE_PREFIX });
  poolEvents.on('completed', ({ jobId }) => attemptEnds.arrive(jobId));
  poolEvents.on('failed', ({ jobId }) => attemptEnds.arrive(jobId));
  await poolEvents.waitUntilReady();

  // The raw baseline: a bare Queue + Worker in this process, on a queue of its own.
  // In braces, a hash tag: on a Redis Cluster every key of the queue must share a slot (CROSSSLOT otherwise).
  const rawQueueName = `{bench-raw-${randomBytes(4).toString('hex')}}`;
  const rawQueue = new Queue(rawQueueName, { connection: redis() });
  const rawEnds = new JobEnds();
  const rawProcessingAt = new Map<string, number>();
  const rawWorker = new Worker(rawQueueName, async (job) => void rawProcessingAt.set(job.id!, performance.now()), {
    connection: redis(),
    concurrency: POOL_CONCURRENCY,
  });
  rawWorker.on('completed', (job) => rawEnds.arrive(job.id));
  rawWorker.on('failed', (job) => rawEnds.arrive(job?.id));
  await rawWorker.waitUntilReady();

  const rawRows = async (inFlight: number, count: number): Promise<LatencyRow[]> => {
    const processing: number[] = [];
    const completed: number[] = [];
    let failed = 0;
    const seconds = await runConcurrently(count, inFlight, async () => {
      const added = performance.now();
      const job = await rawQueue.add('empty', {}, { removeOnComplete: true, removeOnFail: true });
      if (!(await rawEnds.wait(job.id!))) return void (failed += 1);
      completed.push(performance.now() - added);
      processing.push(rawProcessingAt.get(job.id!)! - added);
      rawProcessingAt.delete(job.id!);
    });
    return [
      { name: 'raw BullMQ: add → processor called (empty job)', inFlight, count, latencies: processing, perSecond: count / seconds, failed },
      { name: 'raw BullMQ: add → completed event', inFlight, count, latencies: completed, perSecond: count / seconds, failed },
    ];
  };

  /** Creates a run of `asset` and waits for its job to end; the run is read back later, off the clock. */
  const createAndFollow = async (asset: string, into: TimedRun[]): Promise<void> => {
    const postedAt = Date.now();
    const created = await api.post(`/environments/${ENVIRONMENT}/runs`, { assets: [asset] });
    if (created.status !== 201) return void into.push({ postedAt, run: undefined });
    const run = Run.parse(created.body.data);
    await attemptEnds.wait(run.attempts[0]!.id);
    into.push({ postedAt, run });
  };
  const readBack = async (timed: TimedRun[]): Promise<TimedRun[]> => {
    await runConcurrently(timed.length, 8, async (i) => {
      const entry = timed[i]!;
      if (entry.run) entry.run = Run.parse((await api.get(`/runs/${entry.run.id}`)).body.data);
    });
    return timed;
  };
  const succeededOnce = (run: Run | undefined): run is Run => run?.status === 'succeeded' && run.attempts.length === 1;

  const dispatchRows = async (inFlight: number, count: number, label = ''): Promise<{ rows: LatencyRow[]; runs: TimedRun[]; cpu: Record<string, number>; ops: Record<string, number> }> => {
    const timed: TimedRun[] = [];
    const opsBefore = await mongoOps();
    const cpuBefore = cpuNow();
    const seconds = await runConcurrently(count, inFlight, () => createAndFollow('empty', timed));
    const cpuAfter = cpuNow();
    const opsAfter = await mongoOps();
    await readBack(timed);
    const good = timed.filter((entry) => succeededOnce(entry.run));
    const failed = count - good.length;
    const running = good.map((entry) => ms(entry.run!.attempts[0]!.started_at) - entry.postedAt);
    const succeeded = good.map((entry) => ms(entry.run!.finished_at) - entry.postedAt);
    const cpu = Object.fromEntries(Object.keys(cpuBefore).map((name) => [name, ((cpuAfter[name]! - cpuBefore[name]!) * 1000) / count]));
    return {
      rows: [
        { name: `run: POST → attempt running${label}`, inFlight, count, latencies: running, perSecond: count / seconds, failed },
        { name: `run: POST → run succeeded${label}`, inFlight, count, latencies: succeeded, perSecond: count / seconds, failed },
      ],
      runs: timed,
      cpu,
      // The two serverStatus calls themselves are among them: 2 of `count` runs' operations.
      ops: Object.fromEntries(Object.keys(opsBefore).map((name) => [name, (opsAfter[name]! - opsBefore[name]!) / count])),
    };
  };

  let worker: PoolWorker = await startWorker('bench-latency', 'bwrap');
  const accounted = (): Record<string, Array<number | undefined>> => ({ bench: [process.pid], 'pool worker': [worker.process.pid], ...stackProcessGroups(stack) });
  const cpuNow = (): Record<string, number> => {
    const listed: Record<string, number> = {
      ...Object.fromEntries(Object.entries(accounted()).map(([name, pids]) => [name, pids.reduce<number>((sum, pid) => sum + cpuSecondsOf(pid), 0)])),
      'asset child processes (reaped by the worker)': endedChildrenCpuSecondsOf(worker.process.pid),
    };
    const machine = machineBusyCpuSeconds();
    // Everything else the machine did: sandboxed children (reaped by their sandbox's init, not the
    // worker), the kernel's work for their namespaces, PostgreSQL's backends, and noise.
    return { ...listed, 'rest of the machine': machine - Object.values(listed).reduce((a, b) => a + b, 0) };
  };

  const rows: LatencyRow[] = [];
  const breakdowns: Array<{ inFlight: number; runs: TimedRun[] }> = [];
  const cpuPerRun: Array<{ inFlight: number; cpu: Record<string, number> }> = [];
  /** The same measurements with the worker's OS sandbox off (SANDBOX=off), for the ratio. */
  const unsandboxed: { rows: LatencyRow[]; cpu: Array<{ inFlight: number; cpu: Record<string, number> }> } = { rows: [], cpu: [] };
  let drain: string[];
  let emit: string[];
  let webhookLines: string[];
  let spawnFloor: number[];
  let bwrapFloor: SpawnCost;
  /** Dispatch at 1 and 10 in flight, then throughput, on the worker running now; raw BullMQ beside it when asked. */
  const measure = async (into: { rows: LatencyRow[]; cpu: Array<{ inFlight: number; cpu: Record<string, number> }> }, withRaw: boolean, label: string) => {
    // Warm-up: the worker fetches and unpacks the bundle once; connections and JIT warm up.
    await dispatchRows(1, 10);
    for (const [inFlight, count] of [
      [1, 100],
      [POOL_CONCURRENCY, 300],
    ] as const) {
      if (withRaw) rows.push(...(await rawRows(inFlight, count)));
      const dispatched = await dispatchRows(inFlight, count, label);
      into.rows.push(...dispatched.rows);
      for (const row of dispatched.rows) console.error(`  ${row.name}, ${inFlight} in flight: p50 ${percentile(row.latencies, 50).toFixed(1)} ms, p99 ${percentile(row.latencies, 99).toFixed(1)} ms, ${row.perSecond.toFixed(1)}/s`);
      if (withRaw) breakdowns.push({ inFlight, runs: dispatched.runs });
      into.cpu.push({ inFlight, cpu: dispatched.cpu });
      if (withRaw) opsPerRun.push({ inFlight, ops: dispatched.ops });
    }
    // Throughput: more in flight than the worker takes at once, so that its queue never runs dry.
    const saturated = await dispatchRows(3 * POOL_CONCURRENCY, 300, `${label}, throughput`);
    into.rows.push(saturated.rows[1]!);
    console.error(`  throughput${label}: ${saturated.rows[1]!.perSecond.toFixed(1)} runs/s`);
    into.cpu.push({ inFlight: 3 * POOL_CONCURRENCY, cpu: saturated.cpu });
  };
  /** Throughput of each mode in alternating rounds, so that a slower minute of a shared machine does not land on one mode only. */
  const throughputRounds: Record<'bwrap' | 'off', number[]> = { bwrap: [], off: [] };
  try {
    await rawRows(POOL_CONCURRENCY, 100);
    await measure({ rows, cpu: cpuPerRun }, true, '');
    throughputRounds.bwrap.push(rows.at(-1)!.perSecond);
    await worker.process.stop();
    worker = await startWorker('bench-unsandboxed', 'off');
    await measure(unsandboxed, false, ' (SANDBOX=off)');
    throughputRounds.off.push(unsandboxed.rows.at(-1)!.perSecond);
    for (const mode of ['bwrap', 'off', 'bwrap', 'off'] as const) {
      await worker.process.stop();
      worker = await startWorker(`bench-round-${mode}`, mode);
      await dispatchRows(1, 10);
      const round = await dispatchRows(3 * POOL_CONCURRENCY, 300, ` (${mode})`);
      throughputRounds[mode].push(round.rows[1]!.perSecond);
      console.error(`  throughput round, ${mode}: ${round.rows[1]!.perSecond.toFixed(1)} runs/s`);
    }

    webhookLines = await withAndWithoutWebhook();

    spawnFloor = await sandboxedSpawnFloor(dataDir, 20);
    bwrapFloor = await bareBubblewrapFloor(30);

    await worker.process.stop();
    drain = await queuedThenDrained();
    // The emit runs sandboxed, as the product runs it.
    await worker.process.stop();
    worker = await startWorker('bench-emit', 'bwrap');
    emit = await emitAgainstDirectWrite();
  } finally {
    await worker.process.stop();
    await rawWorker.close();
    await rawQueue.obliterate({ force: true }).catch(() => undefined);
    await rawQueue.close();
    await poolEvents.close();
    for (const client of redisClients) client.disconnect();
    counter.close();
    await mongo.close();
  }

  /**
   * Throughput with a webhook subscribed to every run event (a receiver in this process, on
   * the loopback), against the same rounds with it disabled, alternating; and each event's
   * lag from its time (recorded in its change's transaction) to its delivery's arrival.
   */
  async function withAndWithoutWebhook(): Promise<string[]> {
    const lags: number[] = [];
    const succeededDelivered = new Set<string>();
    let arrivals: Array<() => void> = [];
    const receiver = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        const arrived = Date.now();
        const event = (JSON.parse(body) as { data: { type: string; time: string; subject: { id: string } } }).data;
        lags.push(arrived - Date.parse(event.time));
        if (event.type === 'run.succeeded') succeededDelivered.add(event.subject.id);
        response.end();
        for (const wake of arrivals.splice(0)) wake();
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const created = await api.post('/webhooks', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`, events: ['run.*'], environment: ENVIRONMENT });
    if (created.status !== 201) throw new Error(`creating the bench's webhook answered ${created.status}: ${created.text}`);
    const webhookId = created.body.data.id as string;
    const rounds: Record<'none' | 'webhook', number[]> = { none: [], webhook: [] };
    let lastLagCount = 0;
    const roundLags: number[] = [];
    try {
      for (const mode of ['none', 'webhook', 'none', 'webhook', 'none', 'webhook'] as const) {
        const enabled = await api.patch(`/webhooks/${webhookId}`, { enabled: mode === 'webhook' });
        if (enabled.status !== 200) throw new Error(`switching the bench's webhook answered ${enabled.status}`);
        await dispatchRows(1, 10);
        const round = await dispatchRows(3 * POOL_CONCURRENCY, 300, ` (${mode === 'webhook' ? 'a webhook on every run event' : 'no webhook'})`);
        rounds[mode].push(round.rows[1]!.perSecond);
        console.error(`  throughput round, ${mode}: ${round.rows[1]!.perSecond.toFixed(1)} runs/s`);
        if (mode === 'webhook') {
          // Evidence, not time: every run of the round has its run.succeeded delivered.
          const ids = round.runs.flatMap((entry) => (entry.run ? [entry.run.id] : []));
          const deadline = Date.now() + 120_000;
          while (!ids.every((id) => succeededDelivered.has(id)) && Date.now() < deadline) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, 1_000);
              arrivals.push(() => (clearTimeout(timer), resolve()));
            });
          }
          const missing = ids.filter((id) => !succeededDelivered.has(id)).length;
          if (missing > 0) throw new Error(`${missing} runs' run.succeeded never reached the bench's webhook`);
          roundLags.push(...lags.slice(lastLagCount));
        }
        lastLagCount = lags.length;
      }
    } finally {
      await api.delete(`/webhooks/${webhookId}`);
      arrivals = [];
      receiver.close();
    }
    const ratio = median(rounds.webhook) / median(rounds.none);
    console.error(`  webhook: ${ratio.toFixed(2)}x, lag p50 ${percentile(roundLags, 50).toFixed(0)} ms, p99 ${percentile(roundLags, 99).toFixed(0)} ms`);
    return [
      `A webhook subscribed to every run event of the environment (\`run.*\`: queued, started, succeeded; three deliveries per run, one stream, so in order), its receiver in the bench on the loopback, against the same rounds with the webhook disabled (target: ≥ 0.9x, issue 40). Every event is in the transactional outbox in both: it cannot be turned off.`,
      '',
      '| measure | with the webhook | without | ratio |',
      '|---|---:|---:|---:|',
      `| empty runs/s at ${3 * POOL_CONCURRENCY} in flight, median of ${rounds.webhook.length} alternating rounds (${rounds.webhook.map((value) => value.toFixed(1)).join(', ')} against ${rounds.none.map((value) => value.toFixed(1)).join(', ')}) | ${median(rounds.webhook).toFixed(1)} | ${median(rounds.none).toFixed(1)} | ${ratio.toFixed(2)}x (${ratio >= 0.9 ? 'met' : 'missed'}) |`,
      '',
      `Event lag, from the event's \`time\` (taken in its change's transaction) to the delivery's arrival at the receiver (same clock), over ${roundLags.length} deliveries of the webhook rounds: p50 ${percentile(roundLags, 50).toFixed(0)} ms, p90 ${percentile(roundLags, 90).toFixed(0)} ms, p99 ${percentile(roundLags, 99).toFixed(0)} ms. It holds the outbox relay (nudged on commit), the audit log's write, the fan-out into deliveries, the queue and the POST; a round's burst of 900 deliveries in one stream goes one at a time.`,
    ];
  }

  async function setEgress(egress: 'none' | 'public'): Promise<void> {
    const patched = await api.patch(`/environments/${ENVIRONMENT}`, { egress });
    if (patched.status !== 200) throw new Error(`setting the environment's egress to ${egress} answered ${patched.status}`);
  }

  async function queuedThenDrained(): Promise<string[]> {
    console.error(`  creating ${QUEUED_RUNS} runs with no worker running...`);
    const created: Run[] = [];
    await runConcurrently(QUEUED_RUNS, 16, async () => {
      const response = await api.post(`/environments/${ENVIRONMENT}/runs`, { assets: ['counted'] });
      if (response.status !== 201) throw new Error(`creating a run answered ${response.status}`);
      created.push(Run.parse(response.body.data));
    });
    const pool = PoolStatus.parse((await api.get('/pool')).body.data);
    // Egress is taken at each attempt's start: public for the drain alone (see assetCode), none again after it.
    await setEgress('public');
    executions.clear();
    const workerStarted = Date.now();
    worker = await startWorker('bench-drain', 'off');
    const ended = await Promise.all(created.map((run) => attemptEnds.wait(run.attempts[0]!.id, 10 * 60_000)));
    await setEgress('none');
    const runs = (await readBack(created.map((run) => ({ postedAt: 0, run })))).map((entry) => entry.run!);
    const logLines = new Map<string, RunLogLine[]>();
    await runConcurrently(runs.length, 8, async (i) => {
      const lines = (await api.get(`/runs/${runs[i]!.id}/logs`)).body.data as unknown[];
      logLines.set(runs[i]!.id, lines.map((line) => RunLogLine.parse(line)));
    });
    const succeeded = runs.filter((run) => run.status === 'succeeded').length;
    const oneAttempt = runs.filter((run) => run.attempts.length === 1).length;
    const ranOnce = runs.filter((run) => executions.get(`${run.id} 1`) === 1).length;
    const totalExecutions = [...executions.values()].reduce((a, b) => a + b, 0);
    const loggedOnce = runs.filter((run) => logLines.get(run.id)!.filter((line) => line.message === 'counted').length === 1).length;
    const firstStart = Math.min(...runs.map((run) => ms(run.attempts[0]!.started_at)));
    const lastFinish = Math.max(...runs.map((run) => ms(run.finished_at)));
    const verdict = succeeded === QUEUED_RUNS && oneAttempt === QUEUED_RUNS && ranOnce === QUEUED_RUNS && totalExecutions === QUEUED_RUNS && loggedOnce === QUEUED_RUNS;
    console.error(`  drained: ${succeeded} succeeded, ${totalExecutions} executions, ${((lastFinish - firstStart) / 1000).toFixed(1)} s`);
    return [
      `**${QUEUED_RUNS} runs queued, then drained** (asset \`counted\`: one POST to a counter in the bench, then one ctx.log): ${pool.attempts.queued} attempts queued and ${pool.attempts.running} running before the worker started; ` +
        `${ended.filter(Boolean).length} jobs ended, ${succeeded} runs succeeded, ${oneAttempt} with exactly one attempt, ${ranOnce} whose code reported exactly one execution (${totalExecutions} executions counted in all), ${loggedOnce} with exactly one "counted" log line — ${verdict ? 'no loss, no duplicate' : 'LOSS OR DUPLICATE'}. ` +
        `Drained in ${((lastFinish - firstStart) / 1000).toFixed(1)} s from the first attempt started to the last run finished (${(QUEUED_RUNS / ((lastFinish - firstStart) / 1000)).toFixed(1)} runs/s), ${((lastFinish - workerStarted) / 1000).toFixed(1)} s counting the worker's start.`,
    ];
  }

  async function emitAgainstDirectWrite(): Promise<string[]> {
    const emitMs: number[] = [];
    for (let i = 0; i < EMIT_REPEATS; i += 1) {
      const timed: TimedRun[] = [];
      await createAndFollow('wide', timed);
      const run = (await readBack(timed))[0]?.run;
      if (run?.status !== 'succeeded') throw new Error(`the ${EMIT_ROWS}-row run ended ${run?.status}: ${run?.error}`);
      const lines = ((await api.get(`/runs/${run.id}/logs`)).body.data as unknown[]).map((line) => RunLogLine.parse(line));
      const at = (message: string) => ms(lines.find((line) => line.message === message)?.at);
      emitMs.push(at('emit done') - at('emit start'));
    }
    const makeRows = await loadMakeRows();
    const directMs: number[] = [];
    for (let i = 0; i < EMIT_REPEATS; i += 1) {
      const rows = makeRows(EMIT_ROWS);
      const started = performance.now();
      await writeFile(join(dataDir, `direct-${i}.parquet`), encodeWideRows(rows));
      directMs.push(performance.now() - started);
    }
    const rate = (millis: number) => EMIT_ROWS / (millis / 1000);
    const emitRate = rate(median(emitMs));
    const directRate = rate(median(directMs));
    const ratio = emitRate / directRate;
    console.error(`  emit: ${median(emitMs)} ms, direct ${median(directMs).toFixed(0)} ms`);
    return [
      `| ${EMIT_ROWS.toLocaleString('en')} rows, 5 columns | median ms of ${EMIT_REPEATS} | rows/s | ratio |`,
      '|---|---:|---:|---:|',
      `| hyparquet-writer in the bench process: rows → columns, encode, write the file | ${median(directMs).toFixed(0)} | ${directRate.toFixed(0)} | — |`,
      `| ctx.emit in a run on the pool worker, "emit start" → "emit done" log lines | ${median(emitMs).toFixed(0)} | ${emitRate.toFixed(0)} | ${ratio.toFixed(2)}x (target ≥ 0.5x: ${ratio >= 0.5 ? 'met' : 'missed'}) |`,
      '',
      'The emit is timed by the worker\'s own timestamps of the two log lines around `await ctx.emit(rows)` (1 ms resolution); it includes the check against the declared schema and the Parquet encode in the sandboxed child, the file\'s trip to the worker over the channel, the spool write, storing it, reading it back and comparing, and recording the materialization through the gateway. The rows are made before the first line, on both sides.',
    ];
  }

  const byName = (name: string, inFlight: number) => rows.find((row) => row.name === name && row.inFlight === inFlight)!;
  const p50 = (row: LatencyRow) => percentile(row.latencies, 50);
  const p99 = (row: LatencyRow) => percentile(row.latencies, 99);
  const targetLines = [1, POOL_CONCURRENCY].map((inFlight) => {
    const raw = byName('raw BullMQ: add → processor called (empty job)', inFlight);
    const running = byName('run: POST → attempt running', inFlight);
    const succeeded = byName('run: POST → run succeeded', inFlight);
    const verdict = (ok: boolean) => (ok ? 'met' : 'missed');
    return `- ${inFlight} in flight: POST → attempt running p50 ${p50(running).toFixed(0)} ms against raw ${p50(raw).toFixed(1)} + 10 ms (${verdict(p50(running) <= p50(raw) + 10)}), p99 ${p99(running).toFixed(0)} ms against 100 ms (${verdict(p99(running) <= 100)}); POST → run succeeded p50 ${p50(succeeded).toFixed(0)} ms, p99 ${p99(succeeded).toFixed(0)} ms (${verdict(p99(succeeded) <= 100)} against 100 ms).`;
  });
  const throughput = rows.find((row) => row.name.endsWith('throughput'))!;
  const sandboxRatio = median(throughputRounds.bwrap) / median(throughputRounds.off);
  const offRow = (name: string, inFlight: number) => unsandboxed.rows.find((row) => row.name === `${name} (SANDBOX=off)` && row.inFlight === inFlight)!;
  const stage = (runs: TimedRun[], from: (entry: TimedRun & { run: Run }) => number, to: (entry: TimedRun & { run: Run }) => number) =>
    median(runs.filter((entry): entry is TimedRun & { run: Run } => succeededOnce(entry.run)).map((entry) => to(entry) - from(entry))).toFixed(0);
  const cpuNames = Object.keys(cpuPerRun[0]!.cpu);
  /** CPU ms per empty run over all processes, at the throughput row (the last measured), sandboxed and with SANDBOX=off. */
  const sandboxedCpu = Object.values(cpuPerRun.at(-1)!.cpu).reduce((a, b) => a + b, 0);
  const unsandboxedCpu = Object.values(unsandboxed.cpu.at(-1)!.cpu).reduce((a, b) => a + b, 0);

  return [
    '### Runs and attempts',
    '',
    '| operation | in flight | runs | p50 ms | p99 ms | per second | failed |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map((row) => `| ${row.name} | ${row.inFlight} | ${row.count} | ${p50(row).toFixed(1)} | ${p99(row).toFixed(1)} | ${row.perSecond.toFixed(1)} | ${row.failed} |`),
    '',
    `One pool worker (\`attempt-worker --pool\`, concurrency ${POOL_CONCURRENCY}) on the same machine; the raw Worker also at concurrency ${POOL_CONCURRENCY}, in the bench process, on the same Redis. ` +
      'A run is timed from the moment the bench sends its POST (`Date.now()`) to the services\' own timestamps, read back after the run: the attempt\'s `started_at` (it turned `running`) and the run\'s `finished_at` (1 ms resolution, same clock). ' +
      'The bench learns that a run ended from BullMQ\'s event stream on the pool\'s queue (QueueEvents), not by polling. Raw BullMQ is timed with `performance.now()` in the bench: add → the processor is called, and add → the Worker\'s `completed` event. ' +
      '"failed" counts runs that did not succeed with exactly one attempt.',
    '',
    'Against the targets (dispatch p50 ≤ raw + 10 ms, p99 ≤ 100 ms; ≥ 100 runs/s):',
    '',
    ...targetLines,
    `- throughput: ${throughput.perSecond.toFixed(1)} empty runs/s end to end at ${throughput.inFlight} in flight (${throughput.perSecond >= 100 ? 'met' : 'missed'}).`,
    '',
    `The OS sandbox (bubblewrap, rlimits${process.env.ASSET_CGROUPS === 'off' ? '; ASSET_CGROUPS=off: no cgroup per asset' : ', a cgroup per asset'}) against the same worker with SANDBOX=off, in the same run (target: sandboxed ≥ 0.85x of unsandboxed runs/s, issue 34):`,
    '',
    '| measure | sandboxed | SANDBOX=off | ratio |',
    '|---|---:|---:|---:|',
    `| empty runs/s at ${throughput.inFlight} in flight, median of ${throughputRounds.bwrap.length} alternating rounds (${throughputRounds.bwrap.map((value) => value.toFixed(1)).join(', ')} against ${throughputRounds.off.map((value) => value.toFixed(1)).join(', ')}) | ${median(throughputRounds.bwrap).toFixed(1)} | ${median(throughputRounds.off).toFixed(1)} | ${sandboxRatio.toFixed(2)}x (${sandboxRatio >= 0.85 ? 'met' : 'missed'}) |`,
    ...[1, POOL_CONCURRENCY].flatMap((inFlight) =>
      ['run: POST → attempt running', 'run: POST → run succeeded'].map((name) => {
        const on = byName(name, inFlight);
        const off = offRow(name, inFlight);
        return `| ${name.slice('run: '.length)}, p50 ms, ${inFlight} in flight | ${p50(on).toFixed(1)} | ${p50(off).toFixed(1)} | ${(p50(on) / p50(off)).toFixed(2)}x |`;
      }),
    ),
    `| CPU ms per empty run, all processes, ${throughput.inFlight} in flight | ${sandboxedCpu.toFixed(1)} | ${unsandboxedCpu.toFixed(1)} | ${(sandboxedCpu / unsandboxedCpu).toFixed(2)}x |`,
    '',
    'Where a run\'s time goes (medians, ms, from the services\' timestamps):',
    '',
    '| in flight | POST sent → run stored (`inserted_at`) | stored → attempt running (queue add, pick-up, start call) | running → attempt finished (plan, bundle check, child process, finish call) |',
    '|---:|---:|---:|---:|',
    ...breakdowns.map(
      ({ inFlight, runs }) =>
        `| ${inFlight} | ${stage(runs, (e) => e.postedAt, (e) => ms(e.run.inserted_at))} | ${stage(runs, (e) => ms(e.run.inserted_at), (e) => ms(e.run.attempts[0]!.started_at))} | ${stage(runs, (e) => ms(e.run.attempts[0]!.started_at), (e) => ms(e.run.attempts[0]!.finished_at))} |`,
    ),
    '',
    `A bare \`bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev node -e 0\` (issue 42's floor of a sandboxed run), ${bwrapFloor.count} one after another from the bench: median ${median(bwrapFloor.wallMs).toFixed(0)} ms wall, ${bwrapFloor.cpuMs.toFixed(1)} ms of the machine's CPU each (its busy time over the ${bwrapFloor.count}, less the same length of time idle just after). An empty sandboxed run at ${throughput.inFlight} in flight costs ${sandboxedCpu.toFixed(1)} ms of CPU across all processes: ${(sandboxedCpu - bwrapFloor.cpuMs).toFixed(1)} ms above that floor (issue 42's target for the whole: 50 ms).`,
    '',
    `A bare \`fork\` of Node with the sandbox's flags (\`--permission\`, one \`--allow-fs-read\`, \`--max-old-space-size\`, \`--no-addons\`) running a script that only answers over IPC and exits, from the bench: median ${median(spawnFloor).toFixed(0)} ms of ${spawnFloor.length} (p90 ${percentile(spawnFloor, 90).toFixed(0)} ms). Every asset pays this once.`,
    '',
    'CPU milliseconds per run by process (2 cores), from /proc. The worker waits for its children, so with SANDBOX=off their CPU is in "asset child processes"; a sandboxed child is reaped by its sandbox\'s own init and lands, with the kernel\'s work for its namespaces, in "rest of the machine" (the machine\'s busy time less the processes listed; it also holds Temporal, the workflow-worker and whatever else ran):',
    '',
    `| sandbox | in flight | ${cpuNames.join(' | ')} | total |`,
    `|---|---:|${cpuNames.map(() => '---:').join('|')}|---:|`,
    ...[...cpuPerRun.map((entry) => ['bwrap', entry] as const), ...unsandboxed.cpu.map((entry) => ['off', entry] as const)].map(
      ([mode, { inFlight, cpu }]) => `| ${mode} | ${inFlight} | ${cpuNames.map((name) => cpu[name]!.toFixed(1)).join(' | ')} | ${Object.values(cpu).reduce((a, b) => a + b, 0).toFixed(1)} |`,
    ),
    '',
    'MongoDB operations per empty run, sandboxed, as MongoDB counts them (`serverStatus` opcounters over each row, every database; a command is anything but CRUD, such as a transaction\'s commit, `findAndModify` and `aggregate`; the engine\'s pollers of the same seconds are in it):',
    '',
    `| in flight | ${Object.keys(opsPerRun[0]!.ops).join(' | ')} | total |`,
    `|---:|${Object.keys(opsPerRun[0]!.ops).map(() => '---:').join('|')}|---:|`,
    ...opsPerRun.map(({ inFlight, ops }) => `| ${inFlight} | ${Object.values(ops).map((value) => value.toFixed(1)).join(' | ')} | ${Object.values(ops).reduce((a, b) => a + b, 0).toFixed(1)} |`),
    '',
    ...webhookLines,
    '',
    ...drain,
    '',
    ...emit,
  ];
}

interface SpawnCost {
  count: number;
  wallMs: number[];
  /** The machine's busy CPU per spawn, less what it spent idle over as long just after. */
  cpuMs: number;
}

/**
 * `count` bare bubblewraps of `node -e 0`, one after another: the sandbox's floor. Their
 * CPU is read from the whole machine's busy time, since bwrap's own init reaps the node
 * inside, so no process of the bench's accounts for it.
 */
async function bareBubblewrapFloor(count: number): Promise<SpawnCost> {
  const args = ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--', process.execPath, '-e', '0'];
  const wallMs: number[] = [];
  const busyBefore = machineBusyCpuSeconds();
  const started = performance.now();
  for (let i = 0; i < count; i += 1) {
    const spawnedAt = performance.now();
    const child = spawn('bwrap', args, { stdio: 'ignore' });
    const [code] = (await once(child, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`bwrap node -e 0 exited ${code}`);
    wallMs.push(performance.now() - spawnedAt);
  }
  const busy = machineBusyCpuSeconds() - busyBefore;
  const elapsedMs = performance.now() - started;
  // The same length of time with nothing spawned: what the idle stack and the machine spend anyway.
  const idleBefore = machineBusyCpuSeconds();
  await new Promise((resolve) => setTimeout(resolve, elapsedMs));
  const idle = machineBusyCpuSeconds() - idleBefore;
  return { count, wallMs, cpuMs: ((busy - idle) * 1000) / count };
}

/** Milliseconds of `count` forks of a sandboxed Node child that only says it is done: the floor of a child per asset. */
async function sandboxedSpawnFloor(dataDir: string, count: number): Promise<number[]> {
  const dir = join(dataDir, 'spawn-floor');
  mkdirSync(dir, { recursive: true });
  const script = join(dir, 'done.mjs');
  writeFileSync(script, "process.send({ type: 'done' }, () => process.exit(0));\n");
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    const child = fork(script, [], {
      env: {},
      execArgv: ['--permission', `--allow-fs-read=${dir}`, '--max-old-space-size=512', '--no-addons'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    await once(child, 'exit');
    times.push(performance.now() - started);
  }
  return times;
}
