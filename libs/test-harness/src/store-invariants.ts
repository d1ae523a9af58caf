import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from 'mongodb';

/**
 * Invariants of the engine's stores, checked from MongoDB, Redis and Temporal after a load
 * has stopped and the stack has settled (`npm run soak`, docs/design.md#quality-bars): what
 * the stores hold, never what the load believes. Each check names the ids that break it.
 */
export interface InvariantResult {
  name: string;
  /** What holding means, in a line. */
  rule: string;
  held: boolean;
  /** How many items were checked. */
  checked: number;
  /** The ids (and a word of why) of what breaks it, at most MAX_OFFENDERS. */
  offenders: string[];
}

const MAX_OFFENDERS = 20;
const TERMINAL_RUN = ['succeeded', 'failed', 'canceled'];
const TERMINAL_ATTEMPT = ['succeeded', 'failed', 'lost', 'canceled'];

/** The engine's databases, opened by the administrator. */
export interface EngineStores {
  placement: Db;
  deployment: Db;
  secrets: Db;
}

/** A write the load was answered 2xx for, to be found in the stores. */
export type AcknowledgedWrite =
  | { kind: 'environment'; tenantId: string; id: string; name: string }
  | { kind: 'secret_version'; tenantId: string; environmentId: string; name: string; version: number }
  | { kind: 'binding'; tenantId: string; environmentId: string; name: string }
  | { kind: 'deployment'; tenantId: string; environmentId: string; id: string }
  | { kind: 'run'; tenantId: string; environmentId: string; id: string };

function result(name: string, rule: string, checked: number, offenders: string[]): InvariantResult {
  return { name, rule, held: offenders.length === 0, checked, offenders: offenders.slice(0, MAX_OFFENDERS) };
}

interface RunRow {
  _id: string;
  status: string;
}

interface AttemptRow {
  _id: string;
  run_id: string;
  number: number;
  status: string;
  started_at: Date | null;
  finished_at: Date | null;
}

/**
 * Every run ended, and ended once: terminal itself, every attempt of it terminal, only its
 * last attempt may have succeeded, and the run's state is its last attempt's (a succeeded
 * run's last attempt succeeded; a failed run's did not).
 */
export async function runsEndedOnce({ placement }: EngineStores): Promise<InvariantResult> {
  const runs = await placement.collection<RunRow>('runs').find({}, { projection: { status: 1 } }).toArray();
  const attempts = await attemptsByRun(placement);
  const offenders: string[] = [];
  for (const run of runs) {
    const own = attempts.get(run._id) ?? [];
    const last = own.at(-1);
    if (!TERMINAL_RUN.includes(run.status)) offenders.push(`${run._id}: run ${run.status}`);
    for (const attempt of own) {
      if (!TERMINAL_ATTEMPT.includes(attempt.status)) offenders.push(`${attempt._id}: attempt ${attempt.status} of run ${run._id} (${run.status})`);
      if (attempt !== last && attempt.status === 'succeeded') offenders.push(`${attempt._id}: attempt ${attempt.number} succeeded but run ${run._id} has a later one`);
    }
    if (run.status === 'succeeded' && last?.status !== 'succeeded') offenders.push(`${run._id}: run succeeded, its last attempt ${last?.status ?? 'missing'}`);
    if (run.status === 'failed' && last?.status === 'succeeded') offenders.push(`${run._id}: run failed, its last attempt succeeded`);
  }
  return result('runs-ended-once', 'every run and attempt is terminal, once, and a run ends as its last attempt did', runs.length, offenders);
}

/** No two attempts of one run worked at once: each started after the one before it finished. */
export async function attemptsNeverOverlap({ placement }: EngineStores): Promise<InvariantResult> {
  const attempts = await attemptsByRun(placement);
  const offenders: string[] = [];
  let checked = 0;
  for (const [runId, own] of attempts) {
    checked += own.length;
    for (let index = 1; index < own.length; index++) {
      const before = own[index - 1]!;
      const after = own[index]!;
      if (after.started_at === null) continue;
      if (before.started_at !== null && (before.finished_at === null || before.finished_at > after.started_at)) {
        offenders.push(`${runId}: attempt ${after.number} started ${after.started_at.toISOString()} before attempt ${before.number} finished (${before.finished_at?.toISOString() ?? 'never'})`);
      }
    }
  }
  return result('attempts-never-overlap', 'no attempt of a run starts before the previous one finished', checked, offenders);
}

async function attemptsByRun(placement: Db): Promise<Map<string, AttemptRow[]>> {
  const rows = await placement
    .collection<AttemptRow>('attempts')
    .find({}, { projection: { run_id: 1, number: 1, status: 1, started_at: 1, finished_at: 1 } })
    .sort({ run_id: 1, number: 1 })
    .toArray();
  const byRun = new Map<string, AttemptRow[]>();
  for (const row of rows) {
    const own = byRun.get(row.run_id);
    if (own) own.push(row);
    else byRun.set(row.run_id, [row]);
  }
  return byRun;
}

/**
 * Every write answered 2xx is in its store, unless its environment was deleted later
 * (`deletedEnvironments`, by id: then `deletedEnvironmentsGone` checks it is not).
 */
export async function acknowledgedWritesPresent(stores: EngineStores, writes: readonly AcknowledgedWrite[], deletedEnvironments: ReadonlySet<string>): Promise<InvariantResult> {
  const offenders: string[] = [];
  let checked = 0;
  for (const write of writes) {
    const environmentId = write.kind === 'environment' ? write.id : write.environmentId;
    if (deletedEnvironments.has(environmentId)) continue;
    checked += 1;
    const found = await findWrite(stores, write);
    if (!found) offenders.push(`${write.kind} ${JSON.stringify(write)}: answered 2xx, not stored`);
  }
  return result('acknowledged-writes-present', 'every write answered 2xx is in its store (its environment not deleted since)', checked, offenders);
}

async function findWrite({ placement, deployment, secrets }: EngineStores, write: AcknowledgedWrite): Promise<boolean> {
  const exists = async (db: Db, collection: string, filter: Record<string, unknown>) => (await db.collection(collection).countDocuments(filter, { limit: 1 })) === 1;
  switch (write.kind) {
    case 'environment':
      return exists(placement, 'environments', { _id: write.id, tenant_id: write.tenantId });
    case 'binding':
      return exists(secrets, 'bindings', { tenant_id: write.tenantId, environment_id: write.environmentId, name: write.name });
    case 'run':
      return exists(placement, 'runs', { _id: write.id, tenant_id: write.tenantId, environment_id: write.environmentId });
    case 'deployment':
      return exists(deployment, 'deployments', { _id: write.id, tenant_id: write.tenantId, environment_id: write.environmentId });
    case 'secret_version':
      // A later write of the same secret moves its row on: the version answered or a later one.
      return exists(secrets, 'secrets', { tenant_id: write.tenantId, environment_id: write.environmentId, name: write.name, version: { $gte: write.version } });
  }
}

/** Every deployment ended its ingest: `ready` or `failed`, none in between. */
export async function deploymentsSettled({ deployment }: EngineStores): Promise<InvariantResult> {
  const rows = await deployment.collection<{ _id: string; status: string }>('deployments').find({}, { projection: { status: 1 } }).toArray();
  const offenders = rows.filter((row) => row.status !== 'ready' && row.status !== 'failed').map((row) => `${row._id}: ${row.status}`);
  return result('deployments-settled', 'every deployment is ready or failed', rows.length, offenders);
}

/** No schedule tick made two runs. */
export async function oneRunPerTick({ placement }: EngineStores): Promise<InvariantResult> {
  const twice = await placement
    .collection('runs')
    .aggregate<{ _id: { environment: string; schedule: string; tick: string }; runs: string[] }>([
      { $match: { trigger: 'schedule' } },
      { $group: { _id: { environment: '$environment_id', schedule: '$schedule', tick: '$schedule_tick' }, runs: { $push: '$_id' } } },
      { $match: { 'runs.1': { $exists: true } } },
    ])
    .toArray();
  const checked = await placement.collection('runs').countDocuments({ trigger: 'schedule' });
  return result('one-run-per-tick', 'no (environment, schedule, tick) has two runs', checked, twice.map((row) => `${row._id.environment}/${row._id.schedule}@${row._id.tick}: ${row.runs.join(', ')}`));
}

/**
 * Every recorded materialization is backed: the attempt that wrote it recorded the asset
 * with this very materialization, succeeded or failed after its emit (the outcome's write,
 * under the lease, is what commits it; a superseded lease takes the record back), and its file (a `file://`
 * location) exists. The attempt itself may have failed or been lost later: a retry re-runs
 * only the assets no earlier attempt materialized (docs/api.md, Runs), so an asset's
 * materialization outlives its attempt by design. Object-store locations are counted, not
 * opened.
 */
export async function materializationsBacked({ placement, deployment }: EngineStores): Promise<InvariantResult> {
  const rows = await deployment
    .collection<{ _id: string; attempt_id: string | null; asset_key: string; location: string | null }>('materializations')
    .find({}, { projection: { attempt_id: 1, asset_key: 1, location: 1 } })
    .toArray();
  const attemptIds = [...new Set(rows.map((row) => row.attempt_id).filter((id): id is string => id !== null))];
  const outcomes = new Map(
    (
      await placement
        .collection<{ _id: string; assets: Array<{ key: string; status: string; materialization_id: string | null }> }>('attempts')
        .find({ _id: { $in: attemptIds } }, { projection: { assets: 1 } })
        .toArray()
    ).map((attempt) => [attempt._id, attempt.assets ?? []]),
  );
  const offenders: string[] = [];
  for (const row of rows) {
    if (row.attempt_id !== null) {
      const outcome = outcomes.get(row.attempt_id)?.find((asset) => asset.key === row.asset_key);
      // Succeeded, or failed after its emit (it threw, or its time ran out, once its record
      // had committed): either way the attempt names this materialization as the asset's.
      if ((outcome?.status !== 'succeeded' && outcome?.status !== 'failed') || outcome.materialization_id !== row._id) {
        offenders.push(`${row._id}: attempt ${row.attempt_id} records ${row.asset_key} as ${outcome ? `${outcome.status} with ${outcome.materialization_id ?? 'no materialization'}` : 'nothing'}`);
      }
    }
    if (row.location?.startsWith('file://') && !existsSync(fileURLToPath(row.location))) offenders.push(`${row._id}: its file ${row.location} is missing`);
  }
  return result('materializations-backed', "every materialization is its attempt's outcome of the asset (succeeded, or failed after its emit), and its file exists", rows.length, offenders);
}

/**
 * Queue and store agree: no job waits in a queue for an attempt that is not queued, and no
 * queued attempt that is admitted to its queue lacks its job. `jobs` are the attempt queues'
 * waiting, delayed and active jobs' attempt ids (read from Redis by the caller).
 */
export async function queuesMatchAttempts({ placement }: EngineStores, jobs: ReadonlyMap<string, string>): Promise<InvariantResult> {
  const queued = await placement
    .collection<{ _id: string; waiting_for_slot: boolean; enqueued_at: Date | null; executor: string; admitted_at: Date | null }>('attempts')
    .find({ status: 'queued' }, { projection: { waiting_for_slot: 1, enqueued_at: 1, executor: 1, admitted_at: 1 } })
    .toArray();
  const statusOf = new Map(
    (await placement.collection<{ _id: string; status: string }>('attempts').find({ _id: { $in: [...jobs.keys()] } }, { projection: { status: 1 } }).toArray()).map((row) => [row._id, row.status]),
  );
  const offenders: string[] = [];
  for (const [attemptId, where] of jobs) {
    const status = statusOf.get(attemptId);
    if (status !== 'queued' && status !== 'running') offenders.push(`${attemptId}: a job in ${where} for an attempt ${status ?? 'that does not exist'}`);
  }
  for (const attempt of queued) {
    const offered = !attempt.waiting_for_slot && (attempt.executor !== 'local' || attempt.admitted_at !== null);
    if (offered && !jobs.has(attempt._id)) offenders.push(`${attempt._id}: queued and offered, with no job in its queue`);
  }
  return result('queues-match-attempts', 'no job without a live attempt, no offered attempt without a job', jobs.size + queued.length, offenders);
}

/**
 * What deleted environments may have left outside MongoDB, read by the caller: every key
 * name in Redis, and the files still under the storage prefix of each environment deleted
 * with its data (`purge_data=true`). A queued job of a deleted environment's attempt is
 * `queuesMatchAttempts`'s to find (its attempt is gone).
 */
export interface TracesOutsideMongo {
  redisKeys: readonly string[];
  /** Environment id → the files left under its prefix. */
  purgedPrefixFiles: ReadonlyMap<string, readonly string[]>;
}

/** Nothing carrying a deleted environment's id is left in any of the engine's collections or Redis keys, nor any file of one deleted with its data. */
export async function deletedEnvironmentsGone(
  stores: EngineStores,
  deletedEnvironments: ReadonlySet<string>,
  kept: Readonly<Record<string, string>>,
  outside: TracesOutsideMongo = { redisKeys: [], purgedPrefixFiles: new Map() },
): Promise<InvariantResult> {
  const offenders: string[] = [];
  let checked = outside.redisKeys.length + outside.purgedPrefixFiles.size;
  const ids = [...deletedEnvironments];
  for (const key of outside.redisKeys) {
    const named = ids.find((id) => key.includes(id));
    if (named) offenders.push(`redis ${key}: names deleted environment ${named}`);
  }
  for (const [id, files] of outside.purgedPrefixFiles) {
    if (deletedEnvironments.has(id) && files.length > 0) offenders.push(`${files[0]}${files.length > 1 ? ` and ${files.length - 1} more` : ''}: left under the prefix of ${id}, deleted with its data`);
  }
  for (const db of [stores.placement, stores.deployment, stores.secrets]) {
    for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
      if (kept[`${db.databaseName}.${name}`] !== undefined || name.startsWith('system.')) continue;
      checked += 1;
      const left = await db
        .collection(name)
        .find({ $or: [{ environment_id: { $in: ids } }, { _id: { $in: ids as never[] } }] }, { projection: { _id: 1, environment_id: 1 }, limit: 5 })
        .toArray();
      for (const row of left) offenders.push(`${db.databaseName}.${name} ${String(row._id)}: of deleted environment ${String(row['environment_id'] ?? row._id)}`);
    }
  }
  return result(
    'deleted-environments-gone',
    `nothing of a deleted environment is left in any collection or Redis key, nor a file of one deleted with its data (kept on purpose: ${Object.keys(kept).join(', ') || 'none'})`,
    checked,
    offenders,
  );
}
