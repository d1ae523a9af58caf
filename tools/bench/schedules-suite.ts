// Schedules: (1) activation with five schedules to reconcile against activation with
// none, one environment each, alternating, same bundle; (2) 500 per-minute schedules over
// 100 environments firing for five minutes, every tick's run counted from the runs
// collection (one per schedule and tick, none missing, none twice); (3) 5,000 schedules
// due in the same minute: lateness of each run, ticks turned into runs per second, and
// CPU per tick by process. Ticks are measured up to the run being created and queued:
// (3)'s runs are remote with no worker, so running them never competes with ticking.
import { MongoClient } from 'mongodb';
import { makeBundle, manifestOf } from '@envengine/test-harness';
import { cpuByProcess, median, percentile, runConcurrently, type Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';

const ACTIVATION_ENVIRONMENTS = 50;
const SCHEDULES_PER_ENVIRONMENT = 5;
const FIRING_ENVIRONMENTS = 100;
const FIRING_MINUTES = 5;
const MINUTE_MS = 60_000;
const BURST_ENVIRONMENTS = 100;
const BURST_SCHEDULES_PER_ENVIRONMENT = 50;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function schedulesSuite(_bench: Bench, { stack, auth, dataDir, tenantId }: SuiteContext): Promise<string[]> {
  const { services, servers } = stack;
  // The default quotas (200 environments, 2,000 queued runs) are below what this suite makes: the operator's override, as `npm run admin -- quota set` writes it.
  const admin = await MongoClient.connect(servers.mongo.adminUrl);
  try {
    await admin.db(services.databases['placement-service']).collection<{ _id: string }>('tenant_quotas').updateOne(
      { _id: tenantId },
      { $set: { tenant_id: tenantId, 'limits.environments': 1000, 'limits.queued_runs': 100_000, 'limits.queued_runs_per_environment': 10_000 }, $setOnInsert: { admissions: 0 } },
      { upsert: true },
    );
  } finally {
    await admin.close();
  }
  const api = `${services.gatewayUrl}/api/v1`;
  const json = { ...auth, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${api}${path}`, { method, headers: json, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as { data: Record<string, unknown> };
  };
  const createEnvironment = async (name: string, executor: 'local' | 'remote' = 'local') => {
    await call('POST', '/environments', { name, storage_prefix: `file://${dataDir}/lake/bench/${name}`, executor });
    await call('PUT', `/environments/${name}/bindings/warehouse`, {});
  };

  const bundle = await makeBundle({ 'assets/tick.js': 'export default async () => {}' });
  const uploaded = await fetch(`${api}/bundles`, { method: 'POST', headers: { ...auth, 'content-type': 'application/gzip' }, body: bundle });
  const bundleRef = ((await uploaded.json()) as { data: { bundle_ref: string } }).data.bundle_ref;
  const manifest = (cron: string | null, schedules = SCHEDULES_PER_ENVIRONMENT) => ({
    ...manifestOf([{ key: 'tick' }]),
    jobs: [{ name: 'tick', assets: ['tick'] }],
    schedules: cron === null ? [] : Array.from({ length: schedules }, (_, i) => ({ name: `s${i}`, job: 'tick', cron, timezone: 'UTC' })),
  });
  const deploy = async (environment: string, cron: string | null, schedules = SCHEDULES_PER_ENVIRONMENT) => {
    const started = performance.now();
    const deployed = await call('POST', `/environments/${environment}/deployments`, { manifest: manifest(cron, schedules), bundle_ref: bundleRef });
    if (deployed.data['status'] !== 'ready' || deployed.data['active'] !== true) throw new Error(`deployment into ${environment}: ${JSON.stringify(deployed.data)}`);
    return performance.now() - started;
  };

  // (1) Activation with and without schedules, alternating so that drift hits both alike.
  console.error(`schedules: ${ACTIVATION_ENVIRONMENTS} environments with ${SCHEDULES_PER_ENVIRONMENT} schedules, ${ACTIVATION_ENVIRONMENTS} without`);
  await runConcurrently(ACTIVATION_ENVIRONMENTS, 4, async (i) => {
    await createEnvironment(`plain-${i}`);
    await createEnvironment(`scheduled-${i}`);
  });
  const without: number[] = [];
  const withSchedules: number[] = [];
  for (let i = 0; i < ACTIVATION_ENVIRONMENTS; i += 1) {
    without.push(await deploy(`plain-${i}`, null));
    // Yearly: created and reconciled, never fired during the benchmark.
    withSchedules.push(await deploy(`scheduled-${i}`, '0 0 1 1 *'));
  }
  const ratio = median(withSchedules) / median(without);
  console.error(`  activation p50 ${median(without).toFixed(0)} ms without, ${median(withSchedules).toFixed(0)} ms with 5 schedules (${ratio.toFixed(2)}x)`);

  // (2) 500 per-minute schedules: created paused, resumed together, counted over five whole minutes.
  console.error(`schedules: ${FIRING_ENVIRONMENTS * SCHEDULES_PER_ENVIRONMENT} per-minute schedules for ${FIRING_MINUTES} minutes`);
  const firing = Array.from({ length: FIRING_ENVIRONMENTS }, (_, i) => `ticking-${i}`);
  await runConcurrently(firing.length, 4, async (i) => {
    await createEnvironment(firing[i]!);
    await call('POST', `/environments/${firing[i]}/schedules/pause`, { reason: 'benchmark set-up' });
    await deploy(firing[i]!, '* * * * *');
  });
  await runConcurrently(firing.length, 8, async (i) => void (await call('POST', `/environments/${firing[i]}/schedules/resume`)));
  const resumedAt = Date.now();
  // The window: the first whole minute after every environment was resumed, and four more.
  const windowStart = Math.ceil((resumedAt + 1000) / MINUTE_MS) * MINUTE_MS;
  const ticks = Array.from({ length: FIRING_MINUTES }, (_, i) => windowStart + i * MINUTE_MS);
  await sleep(windowStart - Date.now());
  const cpu = cpuByProcess(stack);
  await sleep(ticks.at(-1)! + 30_000 - Date.now());
  const cpuUsed = cpu.end();
  await runConcurrently(firing.length, 8, async (i) => void (await call('POST', `/environments/${firing[i]}/schedules/pause`, {})));

  const mongo = await MongoClient.connect(servers.mongo.adminUrl);
  try {
    const runs = mongo.db(services.databases['placement-service']).collection('runs');
    const environmentIds = await Promise.all(firing.map(async (name) => (await call('GET', `/environments/${name}`)).data['id'] as string));
    const scope = { environment_id: { $in: environmentIds }, trigger: 'schedule' };
    // Wait until every scheduled run has ended (evidence), at most ten minutes.
    for (let waited = 0; (await runs.countDocuments({ ...scope, status: { $in: ['queued', 'running'] } })) > 0 && waited < 600; waited += 1) await sleep(1000);
    const rows = await runs
      .find(scope, { projection: { environment_id: 1, schedule: 1, schedule_tick: 1, status: 1, inserted_at: 1 } })
      .toArray();
    const tickKeys = new Set(ticks.map((tick) => new Date(tick).toISOString().slice(0, 19)));
    const perTick = new Map<string, number>();
    const lateness: number[] = [];
    let outside = 0;
    let succeeded = 0;
    for (const row of rows) {
      if (!tickKeys.has(row['schedule_tick'] as string)) {
        outside += 1;
        continue;
      }
      const key = `${row['environment_id']}/${row['schedule']}/${row['schedule_tick']}`;
      perTick.set(key, (perTick.get(key) ?? 0) + 1);
      lateness.push((row['inserted_at'] as Date).getTime() - Date.parse(`${row['schedule_tick']}Z`));
      if (row['status'] === 'succeeded') succeeded += 1;
    }
    const expected = firing.length * SCHEDULES_PER_ENVIRONMENT * FIRING_MINUTES;
    // The tick loops' own account: every tick recorded with its outcome on its stored schedule.
    const recorded = await mongo.db(services.databases['placement-service']).collection('schedules')
      .aggregate<{ skipped: number; missed: number; late: number }>([
        { $match: { environment_id: { $in: environmentIds } } },
        { $group: { _id: null, skipped: { $sum: '$ticks.skipped_overlap' }, missed: { $sum: '$ticks.missed' }, late: { $sum: '$ticks.late' } } },
      ])
      .toArray();
    const skipped = recorded[0]?.skipped ?? 0;
    console.error(`  recorded by the tick loops: ${recorded[0]?.missed ?? 0} missed, ${recorded[0]?.late ?? 0} late (over the whole run, set-up included)`);
    const duplicates = [...perTick.values()].filter((count) => count > 1).length;
    const found = perTick.size;
    console.error(`  ${found}/${expected} ticks have a run, ${duplicates} twice, ${skipped} skipped for overlap, ${succeeded} succeeded; tick to run p50 ${median(lateness)} ms`);
    const burst = await scheduleBurst();
    return [
      '### Schedules',
      '',
      `Activation of one deployment (ingest and activation through the gateway, 1 in flight), ${ACTIVATION_ENVIRONMENTS} environments each, alternating:`,
      '',
      '| activation | p50 ms | p99 ms | ratio to none |',
      '|---|---:|---:|---:|',
      `| without schedules | ${median(without).toFixed(0)} | ${percentile(without, 99).toFixed(0)} | 1.00x |`,
      `| reconciling ${SCHEDULES_PER_ENVIRONMENT} new schedules | ${median(withSchedules).toFixed(0)} | ${percentile(withSchedules, 99).toFixed(0)} | ${ratio.toFixed(2)}x (target <= 1.5x) |`,
      '',
      `${FIRING_ENVIRONMENTS * SCHEDULES_PER_ENVIRONMENT} per-minute schedules (${FIRING_ENVIRONMENTS} environments × ${SCHEDULES_PER_ENVIRONMENT}) over ${FIRING_MINUTES} whole minutes, runs on the local runner, counted from the runs collection by (schedule, tick):`,
      '',
      '| ticks expected | ticks with a run | ticks with two runs | ticks skipped (previous run still going) | runs succeeded | tick to run created p50 / p99 ms | runs outside the window |',
      '|---:|---:|---:|---:|---:|---:|---:|',
      `| ${expected} | ${found} | ${duplicates} | ${skipped} | ${succeeded} | ${median(lateness)} / ${percentile(lateness, 99)} | ${outside} |`,
      '',
      `CPU seconds per process over the window (${cpuUsed.wallSeconds.toFixed(0)} s; the machine has 2 cores, ${(cpuUsed.wallSeconds * 2).toFixed(0)} CPU seconds): ${Object.entries(cpuUsed.seconds)
        .filter(([, seconds]) => seconds >= 0.5)
        .sort((a, b) => b[1] - a[1])
        .map(([name, seconds]) => `${name} ${seconds.toFixed(0)}`)
        .join(', ')}; the machine in all ${cpuUsed.machine.toFixed(0)}.`,
      '',
      `The tick loops' own records over the schedules' lives (set-up and the minute after the window included): ${recorded[0]?.missed ?? 0} ticks missed, ${recorded[0]?.late ?? 0} late, ${skipped} skipped for overlap.`,
      '',
      ...burst,
    ];
  } finally {
    await mongo.close();
  }

  /** (3) 5,000 schedules due in the same minute, on remote environments with no worker: ticking alone. */
  async function scheduleBurst(): Promise<string[]> {
    const total = BURST_ENVIRONMENTS * BURST_SCHEDULES_PER_ENVIRONMENT;
    console.error(`schedules: ${total} schedules due in the same minute`);
    const names = Array.from({ length: BURST_ENVIRONMENTS }, (_, i) => `burst-${i}`);
    await runConcurrently(names.length, 4, async (i) => {
      await createEnvironment(names[i]!, 'remote');
      await call('POST', `/environments/${names[i]}/schedules/pause`, { reason: 'benchmark set-up' });
      await deploy(names[i]!, '* * * * *', BURST_SCHEDULES_PER_ENVIRONMENT);
    });
    // Every resume must land inside the minute before the fire time: a schedule resumed
    // before an earlier minute's boundary would fire there, and its run (queued, with no
    // worker) would make it skip the measured tick for overlap.
    const intoMinute = Date.now() % MINUTE_MS;
    if (intoMinute > MINUTE_MS / 2) await sleep(MINUTE_MS - intoMinute + 1000);
    const fireAt = Math.ceil(Date.now() / MINUTE_MS) * MINUTE_MS;
    await runConcurrently(names.length, 8, async (i) => void (await call('POST', `/environments/${names[i]}/schedules/resume`)));
    if (Date.now() > fireAt - 1000) throw new Error(`resuming ${names.length} environments took until ${new Date().toISOString()}, past the fire time less 1 s`);
    const tick = new Date(fireAt).toISOString().slice(0, 19);
    await sleep(fireAt - Date.now() - 1000);
    const cpu = cpuByProcess(stack);
    const client = await MongoClient.connect(servers.mongo.adminUrl);
    try {
      const runs = client.db(services.databases['placement-service']).collection('runs');
      const environmentIds = await Promise.all(names.map(async (name) => (await call('GET', `/environments/${name}`)).data['id'] as string));
      const scope = { environment_id: { $in: environmentIds }, schedule_tick: tick };
      // Evidence, not a fixed wait: until every tick has its run, or two minutes.
      for (let waited = 0; (await runs.countDocuments(scope)) < total && waited < 1200; waited += 1) await sleep(100);
      const cpuUsed = cpu.end();
      await runConcurrently(names.length, 8, async (i) => void (await call('POST', `/environments/${names[i]}/schedules/pause`, {})));
      const made = await runs.find(scope, { projection: { inserted_at: 1, environment_id: 1, schedule: 1 } }).toArray();
      const lateness = made.map((row) => (row['inserted_at'] as Date).getTime() - fireAt).sort((a, b) => a - b);
      const distinct = new Set(made.map((row) => `${row['environment_id']}/${row['schedule']}`)).size;
      const first = lateness[0] ?? 0;
      const last = lateness.at(-1) ?? 0;
      const perSecond = made.length / Math.max(0.001, (last - first) / 1000);
      const cpuPerTick = Object.entries(cpuUsed.seconds)
        .filter(([, seconds]) => seconds >= 0.05)
        .sort((a, b) => b[1] - a[1])
        .map(([name, seconds]) => `${name} ${((seconds * 1000) / Math.max(1, made.length)).toFixed(2)}`)
        .join(', ');
      console.error(`  ${made.length}/${total} runs (${distinct} schedules), lateness p50 ${median(lateness)} ms, p99 ${percentile(lateness, 99)} ms, max ${last} ms; ${perSecond.toFixed(0)} ticks/s`);
      return [
        `${total} per-minute schedules (${BURST_ENVIRONMENTS} remote environments × ${BURST_SCHEDULES_PER_ENVIRONMENT}, no worker: ticks measured up to the run created and queued) due in the same minute:`,
        '',
        '| ticks due | runs made | schedules with a run | lateness p50 / p99 / max ms | ticks turned into runs per second (first run to last) |',
        '|---:|---:|---:|---:|---:|',
        `| ${total} | ${made.length} | ${distinct} | ${median(lateness)} / ${percentile(lateness, 99)} / ${last} | ${perSecond.toFixed(0)} (target >= 1,000 embedded) |`,
        '',
        `CPU ms per tick by process (from 1 s before the fire time until the last run, ${cpuUsed.wallSeconds.toFixed(1)} s): ${cpuPerTick}; the machine in all ${((cpuUsed.machine * 1000) / Math.max(1, made.length)).toFixed(2)}.`,
      ];
    } finally {
      await client.close();
    }
  }
}
