import { createHash } from 'node:crypto';
import type { ClientSession, Connection } from 'mongoose';
import type { ReconcileSchedulesResult, ScheduleDefinition, ScheduleTickOutcome } from '@envengine/contracts';
import { nextFireTimes, parseCronExpression } from '@envengine/schedule-timing';
import { TenantScopedModel } from '@envengine/tenant-data';
import { storedScheduleSchema, type StoredScheduleDocument, type StoredTick } from './stored-schedule.schema.ts';

/** Due schedules among which tenants take turns in a batch (the earliest this many). */
const FAIR_WINDOW = 10_000;

/** The tick loop that ticks an environment's schedules: a stable hash of its id over the shards. */
export function shardOf(environmentId: string, shards: number): number {
  return createHash('sha256').update(environmentId).digest().readUInt32BE(0) % shards;
}

/** The schedule's first fire time after `after` (the code the previews and the ticks use), or null. */
export function firstFireAfter(definition: Pick<ScheduleDefinition, 'cron' | 'timezone'>, after: number): Date | null {
  const cron = parseCronExpression(definition.cron);
  // Validation refused a bad expression before the deployment could be activated.
  if (typeof cron === 'string') throw new Error(`cron ${JSON.stringify(definition.cron)} is not valid: ${cron}`);
  const [next] = nextFireTimes(cron, definition.timezone, after, 1);
  return next === undefined ? null : new Date(next);
}

/** What a tick records, applied only if the schedule is still due at the time the tick was for. */
export interface TickRecord {
  /** The stored schedule's id. */
  id: string;
  dueAt: Date;
  nextFireAt: Date | null;
  tick: StoredTick;
}

/**
 * The stored schedules of every environment: made to match the active deployment's
 * manifest on activation, read by the tick loops, advanced a batch of ticks at a time, each
 * with the fire time it was due at as the precondition (a tick retried, or ticked by two
 * replicas at once, is recorded once).
 */
export class StoredSchedulesRepository {
  private readonly schedules: TenantScopedModel<StoredScheduleDocument>;

  constructor(
    connection: Connection,
    private readonly shards: number,
  ) {
    this.schedules = TenantScopedModel.of(connection, 'StoredSchedule', storedScheduleSchema);
  }

  async ensureIndexes(): Promise<void> {
    await this.schedules.ensureIndexes();
    // A changed shard count: schedules of a shard no loop ticks any more move to one that does.
    const stranded = await this.schedules.findAcrossTenants({ shard: { $gte: this.shards } }, { projection: { _id: 1, tenant_id: 1, environment_id: 1 }, limit: 1_000_000 });
    for (const doc of stranded) await this.schedules.updateOne(doc.tenant_id, { _id: doc._id }, { $set: { shard: shardOf(doc.environment_id, this.shards) } });
  }

  get shardCount(): number {
    return this.shards;
  }

  shardOf(environmentId: string): number {
    return shardOf(environmentId, this.shards);
  }

  /**
   * Makes the environment's schedules exactly `target`: new ones get their first fire time
   * after `now`; a changed cron or zone gets a new one; a schedule whose timing is unchanged
   * keeps its fire time and its ticks. Idempotent.
   */
  async reconcile(tenantId: string, environmentId: string, target: ScheduleDefinition[], now: Date, session?: ClientSession): Promise<ReconcileSchedulesResult> {
    const existing = new Map((await this.schedules.find(tenantId, { environment_id: environmentId }, { session })).map((doc) => [doc.name, doc]));
    const result: ReconcileSchedulesResult = { created: [], updated: [], deleted: [] };
    for (const definition of target) {
      const current = existing.get(definition.name);
      const timingChanged = !current || current.cron !== definition.cron || current.timezone !== definition.timezone;
      if (current && !timingChanged && current.job === definition.job) continue;
      const fields = {
        environment_id: environmentId,
        name: definition.name,
        job: definition.job,
        cron: definition.cron,
        timezone: definition.timezone,
        shard: this.shardOf(environmentId),
        updated_at: now,
        ...(timingChanged ? { next_fire_at: firstFireAfter(definition, now.getTime()) } : {}),
      };
      await this.schedules.updateOne(
        tenantId,
        { _id: `${environmentId}:${definition.name}` },
        { $set: fields, $setOnInsert: { last_tick: null, ticks: {} } },
        { upsert: true, session },
      );
      result[current ? 'updated' : 'created'].push(definition.name);
    }
    const wanted = new Set(target.map((definition) => definition.name));
    for (const name of existing.keys()) {
      if (wanted.has(name)) continue;
      await this.schedules.deleteOne(tenantId, { _id: `${environmentId}:${name}` }, { session });
      result.deleted.push(name);
    }
    return result;
  }

  /** The environment's schedules, by name. */
  async ofEnvironment(tenantId: string, environmentId: string): Promise<Map<string, StoredScheduleDocument>> {
    return new Map((await this.schedules.find(tenantId, { environment_id: environmentId })).map((doc) => [doc.name, doc]));
  }

  /**
   * Resume: every schedule of the environment fires next at its first fire time after
   * `now`, so that no tick that fell due while it was paused fires late (no catch-up). In
   * the caller's transaction, with the flag's change.
   */
  async restartFrom(tenantId: string, environmentId: string, now: Date, session: ClientSession): Promise<void> {
    for (const doc of await this.schedules.find(tenantId, { environment_id: environmentId }, { session })) {
      await this.schedules.updateOne(tenantId, { _id: doc._id }, { $set: { next_fire_at: firstFireAfter(doc, now.getTime()), updated_at: now } }, { session });
    }
  }

  /** Removes the environment's schedules (its tear-down); how many. */
  deleteAllOf(tenantId: string, environmentId: string): Promise<number> {
    return this.schedules.deleteMany(tenantId, { environment_id: environmentId });
  }

  /**
   * The shard's schedules due at `now`, at most `limit`, but for those `excluded`
   * (background: the tick loop), taken in turns across tenants: of the earliest
   * `FAIR_WINDOW` due, each tenant's first, then each one's second, and so on, so that a
   * tenant with thousands of schedules due at one time does not push another's few to the
   * end of the pass.
   */
  due(shard: number, now: Date, limit: number, excluded: readonly string[] = []): Promise<StoredScheduleDocument[]> {
    return this.schedules.aggregateAcrossTenants<StoredScheduleDocument>({ shard, next_fire_at: { $lte: now }, ...(excluded.length > 0 ? { _id: { $nin: excluded } } : {}) }, [
      { $sort: { next_fire_at: 1 } },
      { $limit: FAIR_WINDOW },
      { $setWindowFields: { partitionBy: '$tenant_id', sortBy: { next_fire_at: 1 }, output: { turn: { $documentNumber: {} } } } },
      { $sort: { turn: 1, next_fire_at: 1, _id: 1 } },
      { $limit: limit },
      { $unset: 'turn' },
    ]);
  }

  /** The shard's earliest stored fire time but for the schedules `excluded`, or null when none is stored. */
  async earliestDue(shard: number, excluded: readonly string[] = []): Promise<Date | null> {
    const [first] = await this.schedules.findAcrossTenants(
      { shard, next_fire_at: { $type: 'date' }, ...(excluded.length > 0 ? { _id: { $nin: excluded } } : {}) },
      { sort: { next_fire_at: 1 }, limit: 1, projection: { next_fire_at: 1 } },
    );
    return first?.next_fire_at ?? null;
  }

  /** Of these schedules, the ids of those still due at the time given for each, read in the caller's transaction. */
  async stillDue(tenantId: string, schedules: ReadonlyArray<{ id: string; dueAt: Date }>, session: ClientSession): Promise<Set<string>> {
    const current = await this.schedules.find(tenantId, { _id: { $in: schedules.map((schedule) => schedule.id) } }, { projection: { _id: 1, next_fire_at: 1 }, session });
    const stored = new Map(current.map((doc) => [doc._id, doc.next_fire_at?.getTime()]));
    return new Set(schedules.filter((schedule) => stored.get(schedule.id) === schedule.dueAt.getTime()).map((schedule) => schedule.id));
  }

  /**
   * Records ticks and moves each schedule to its next fire time, in the caller's transaction
   * (the one that made the ticks' runs), each only if it is still due at `dueAt`; removes
   * the schedules whose environment is gone. A record whose schedule moved meanwhile fails
   * the transaction (a write conflict is retried by it; anything else fails the tenant's
   * part, tried again shortly with that in view): no tick is counted twice.
   */
  async recordTicks(tenantId: string, records: readonly TickRecord[], orphans: readonly string[], session: ClientSession): Promise<void> {
    const matched = await this.schedules.updateEach(
      tenantId,
      records.map((record) => {
        const increments: Partial<Record<`ticks.${ScheduleTickOutcome}`, number>> = { [`ticks.${record.tick.outcome}`]: 1 };
        if (record.tick.missed > 0) increments['ticks.missed'] = record.tick.missed;
        return {
          filter: { _id: record.id, next_fire_at: record.dueAt },
          update: { $set: { next_fire_at: record.nextFireAt, last_tick: record.tick, updated_at: record.tick.recorded_at }, $inc: increments },
        };
      }),
      { session },
    );
    if (matched !== records.length) throw new Error(`${records.length - matched} of ${records.length} schedules moved during their tick's batch; this tenant's part is tried again shortly`);
    if (orphans.length > 0) await this.schedules.deleteMany(tenantId, { _id: { $in: [...orphans] } }, { session });
  }
}
