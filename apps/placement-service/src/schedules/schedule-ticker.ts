import { LATE_TICK_MS, ScheduleTickOutcome, type TickShardResult } from '@envengine/contracts';
import { parseCronExpression, planTick, tickKeyOf, type TickPlan } from '@envengine/schedule-timing';
import type { Logger } from '@envengine/service-kit';
import type { PlacementMetrics } from '@envengine/service-metrics';
import type { RunsService } from '../runs/runs.service.ts';
import type { TickRunOutcome, TickRunRequest } from '../runs/scheduled-run-batch.ts';
import type { StoredScheduleDocument, StoredTick } from './stored-schedule.schema.ts';
import type { StoredSchedulesRepository, TickRecord } from './stored-schedules.repository.ts';

/** Schedules read per batch of a pass. */
const BATCH = 500;
/** Tenants' parts of a batch turned into runs at once (each one transaction). */
const CONCURRENCY = 8;
/** A pass stops taking new batches after this long, so the activity answers well inside its timeout (the loop calls again at once). */
const PASS_BUDGET_MS = 20_000;
/** A tenant's ticks that failed (Redis or MongoDB refused) are tried again after this long, not at once. */
const FAILED_RETRY_MS = 5_000;
/** A tenant's part of a batch not done in this long is left to finish on its own: the pass goes on with the others. */
const PART_TIMEOUT_MS = 15_000;

const noOutcomes = (): Record<ScheduleTickOutcome, number> =>
  Object.fromEntries(ScheduleTickOutcome.options.map((outcome) => [outcome, 0])) as Record<ScheduleTickOutcome, number>;

/** A due schedule's tick, planned: which fire time it is for, the next one, and how many it missed. */
interface PlannedTick {
  doc: StoredScheduleDocument;
  dueAt: Date;
  plan: TickPlan;
  request: TickRunRequest;
}

/**
 * Ticks a shard's due schedules (docs/design.md#schedules-pause-and-resume): one pass reads
 * the schedules due now in batches of 500; each batch applies the catch-up rule (`planTick`)
 * and turns each tenant's part of it into runs in one transaction
 * (`RunsService.createForTicks`: pause, overlap and quotas applied inside it, the ticks
 * recorded inside it with the fire time they were due at as the precondition), then adds
 * their attempts with one `addBulk` per queue. A pass retried after a crash, or a shard
 * ticked by two replicas at once, makes no tick twice. A tenant's part that fails is left due
 * and tried again shortly; the other tenants' ticks go on.
 */
export class ScheduleTicker {
  constructor(
    private readonly schedules: StoredSchedulesRepository,
    private readonly runsService: RunsService,
    private readonly metrics: PlacementMetrics,
    private readonly log: Logger,
  ) {}

  async tickShard(shard: number): Promise<TickShardResult> {
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.schedules.shardCount) throw new Error(`shard ${shard} is not one of 0..${this.schedules.shardCount - 1}`);
    const started = Date.now();
    const outcomes = noOutcomes();
    const failed: string[] = [];
    let ticked = 0;
    let batches = 0;
    while (Date.now() - started < PASS_BUDGET_MS) {
      const due = await this.schedules.due(shard, new Date(), BATCH, failed);
      if (due.length === 0) break;
      batches += 1;
      const batch = await this.tickBatch(due);
      for (const [outcome, count] of Object.entries(batch.outcomes)) outcomes[outcome as ScheduleTickOutcome] += count;
      failed.push(...batch.failed);
      ticked += due.length - batch.failed.length;
    }
    let next = await this.schedules.earliestDue(shard, failed);
    if (failed.length > 0) {
      const retryAt = new Date(Date.now() + FAILED_RETRY_MS);
      if (next === null || next > retryAt) next = retryAt;
    }
    if (ticked > 0 || failed.length > 0) this.log.info({ shard, ticked, batches, outcomes, failed: failed.length }, 'schedules ticked');
    return { shard, ticked, batches, outcomes, next_due_at: next?.toISOString() ?? null };
  }

  /** One batch: each tenant's part in one transaction, a few tenants at once; the outcomes, and the schedules of parts that failed. */
  private async tickBatch(due: StoredScheduleDocument[]): Promise<{ outcomes: Record<ScheduleTickOutcome, number>; failed: string[] }> {
    const outcomes = noOutcomes();
    const failed: string[] = [];
    const now = Date.now();
    const byTenant = new Map<string, PlannedTick[]>();
    for (const doc of due) {
      const planned = plannedTick(doc, now);
      const own = byTenant.get(doc.tenant_id);
      if (own) own.push(planned);
      else byTenant.set(doc.tenant_id, [planned]);
    }
    const parts = [...byTenant];
    let next = 0;
    const worker = async () => {
      while (next < parts.length) {
        const [tenantId, ticks] = parts[next++]!;
        const part = this.tickTenant(tenantId, ticks);
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<'timed_out'>((resolve) => (timer = setTimeout(() => resolve('timed_out'), PART_TIMEOUT_MS)));
        try {
          const done = await Promise.race([part, timedOut]);
          if (done === 'timed_out') {
            // Held up (a lock of a transaction a killed process left open, until MongoDB expires it): the
            // pass goes on without it. It may still commit; its ticks are counted when it does.
            this.log.warn({ tenant_id: tenantId, ticks: ticks.length }, "a tenant's ticks are held up; the pass goes on and they are tried again shortly");
            failed.push(...ticks.map((tick) => tick.doc._id));
            void part.then((late) => this.count(late, null)).catch(() => undefined);
            continue;
          }
          this.count(done, outcomes);
        } catch (error) {
          this.log.warn({ tenant_id: tenantId, ticks: ticks.length, err: (error as Error).message }, "a tenant's ticks failed; they stay due and are tried again shortly");
          failed.push(...ticks.map((tick) => tick.doc._id));
        } finally {
          clearTimeout(timer);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, parts.length) }, worker));
    return { outcomes, failed };
  }

  /** Counts recorded ticks in the metrics, and in the pass's outcomes when given. */
  private count(ticks: StoredTick[], outcomes: Record<ScheduleTickOutcome, number> | null): void {
    for (const tick of ticks) {
      if (outcomes) {
        outcomes[tick.outcome] += 1;
        outcomes.missed += tick.missed;
      }
      this.metrics.scheduleTicks.inc({ outcome: tick.outcome });
      if (tick.missed > 0) this.metrics.scheduleTicks.inc({ outcome: 'missed' }, tick.missed);
    }
  }

  /** One tenant's part of a batch: its runs made and its ticks recorded in one transaction; the ticks as recorded (none for a tick another pass recorded). */
  private async tickTenant(tenantId: string, ticks: PlannedTick[]): Promise<StoredTick[]> {
    const byId = new Map(ticks.map((tick) => [tick.doc._id, tick]));
    let recorded: StoredTick[] = [];
    await this.runsService.createForTicks(
      tenantId,
      ticks.map((tick) => tick.request),
      {
        stillDue: (session) => this.schedules.stillDue(tenantId, ticks.map((tick) => ({ id: tick.doc._id, dueAt: tick.dueAt })), session),
        record: async (results, session) => {
          const recordedAt = new Date();
          const records: TickRecord[] = [];
          const orphans: string[] = [];
          for (const [id, result] of results) {
            const { dueAt, plan } = byId.get(id)!;
            if (result.result === 'gone') {
              orphans.push(id);
              continue;
            }
            const tick: StoredTick = {
              fire_at: new Date(plan.fireAt),
              outcome: outcomeOf(result, recordedAt.getTime() - plan.fireAt),
              run_id: result.result === 'created' || result.result === 'overlap' ? result.runId : null,
              lateness_ms: recordedAt.getTime() - plan.fireAt,
              missed: plan.missed,
              recorded_at: recordedAt,
            };
            records.push({ id, dueAt, nextFireAt: plan.nextFireAt === null ? null : new Date(plan.nextFireAt), tick });
          }
          await this.schedules.recordTicks(tenantId, records, orphans, session);
          // Kept for after the commit: a transaction run again replaces it.
          recorded = records.map((record) => record.tick);
        },
      },
    );
    return recorded;
  }
}

/** The schedule's tick as the catch-up rule plans it at `now`. */
function plannedTick(doc: StoredScheduleDocument, now: number): PlannedTick {
  const dueAt = doc.next_fire_at!;
  const cron = parseCronExpression(doc.cron);
  if (typeof cron === 'string') throw new Error(`schedule ${doc._id} has a cron that is not valid: ${cron}`);
  const plan = planTick(cron, doc.timezone, dueAt.getTime(), now);
  return {
    doc,
    dueAt,
    plan,
    request: { scheduleId: doc._id, environmentId: doc.environment_id, schedule: doc.name, job: doc.job, key: tickKeyOf(plan.fireAt, doc.timezone), previousOutcome: doc.last_tick?.outcome ?? null },
  };
}

function outcomeOf(result: Exclude<TickRunOutcome, { result: 'gone' }>, latenessMs: number): StoredTick['outcome'] {
  switch (result.result) {
    case 'created':
      return latenessMs > LATE_TICK_MS ? 'late' : 'run_created';
    case 'overlap':
      return 'skipped_overlap';
    case 'paused':
      return 'skipped_paused';
    case 'quota':
      return 'skipped_quota';
  }
}
