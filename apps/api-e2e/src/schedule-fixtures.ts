import type { MongoClient } from 'mongodb';

/**
 * Stored schedules due at `dueAt`, written straight into the placement-service's
 * collection (as a pass of the tick loop finds them after an activation), all in shard 0,
 * so that a test can hand a pass of that shard to whichever replica it likes.
 */
export async function insertDueSchedules(
  mongo: MongoClient,
  database: string,
  target: { tenantId: string; environmentId: string; names: string[]; job: string; cron: string; dueAt: Date },
): Promise<void> {
  const now = new Date();
  await mongo
    .db(database)
    .collection('schedules')
    .insertMany(
      target.names.map((name) => ({
        _id: `${target.environmentId}:${name}` as never,
        tenant_id: target.tenantId,
        environment_id: target.environmentId,
        name,
        job: target.job,
        cron: target.cron,
        timezone: 'UTC',
        shard: 0,
        next_fire_at: target.dueAt,
        last_tick: null,
        ticks: {},
        updated_at: now,
      })),
    );
}

/** The stored schedules of an environment, by name: what the tick loop recorded of each. */
export async function storedSchedulesOf(mongo: MongoClient, database: string, environmentId: string) {
  const docs = await mongo.db(database).collection('schedules').find({ environment_id: environmentId }).toArray();
  return new Map(
    docs.map((doc) => [
      doc['name'] as string,
      doc as unknown as { next_fire_at: Date | null; last_tick: { outcome: string; run_id: string | null; fire_at: Date; missed: number; recorded_at: Date } | null; ticks: Record<string, number> },
    ]),
  );
}
