import { LATE_TICK_MS, ScheduleTickOutcome, type Environment, type TickShardResult } from '@envengine/contracts';
import { parseCronExpression, planTick, tickKeyOf } from '@envengine/schedule-timing';
import type { Logger } from '@envengine/service-kit';
import type { PlacementMetrics } from '@envengine/service-metrics';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { RunRepository } from '../runs/run.repository.ts';
import type { RunsService } from '../runs/runs.service.ts';
import type { StoredScheduleDocument, StoredTick } from './stored-schedule.schema.ts';
import type { StoredSchedulesRepository } from './stored-schedules.repository.ts';

/** Schedules read per batch of a pass. */
const BATCH = 500;
/** Ticks of one batch turned into runs at once. */
const CONCURRENCY = 16;
/** A pass stops taking new batches after this long, so the activity answers well inside its timeout (the loop calls again at once). */
const PASS_BUDGET_MS = 20_000;

const noOutcomes = (): Record<ScheduleTickOutcome, number> =>
  Object.fromEntries(ScheduleTickOutcome.options.map((outcome) => [outcome, 0])) as Record<ScheduleTickOutcome, number>;

/**
 * Ticks a shard's due schedules (DESIGN.md §5 "Schedules"): one pass reads the schedules
 * due now in batches, with their environments and their schedules' unfinished runs read
 * once per batch, and for each applies the catch-up rule (`planTick`), the pause and the
 * overlap rule, makes the tick's run through the run path, and records the tick with the
 * fire time it was due at as the precondition. A pass retried after a crash, or a shard
 * ticked by two replicas at once, makes no tick twice: the run is unique per (schedule,
 * tick) and the record is written once.
 */
export class ScheduleTicker {
  constructor(
    private readonly schedules: StoredSchedulesRepository,
    private readonly environments: EnvironmentRepository,
    private readonly runs: RunRepository,
    private readonly runsService: RunsService,
    private readonly metrics: PlacementMetrics,
    private readonly log: Logger,
  ) {}

  async tickShard(shard: number): Promise<TickShardResult> {
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.schedules.shardCount) throw new Error(`shard ${shard} is not one of 0..${this.schedules.shardCount - 1}`);
    const started = Date.now();
    const outcomes = noOutcomes();
    let ticked = 0;
    let batches = 0;
    while (Date.now() - started < PASS_BUDGET_MS) {
      const due = await this.schedules.due(shard, new Date(), BATCH);
      if (due.length === 0) break;
      batches += 1;
      for (const [outcome, count] of Object.entries(await this.tickBatch(due))) outcomes[outcome as ScheduleTickOutcome] += count;
      ticked += due.length;
    }
    const next = await this.schedules.earliestDue(shard);
    if (ticked > 0) this.log.info({ shard, ticked, batches, outcomes }, 'schedules ticked');
    return { shard, ticked, batches, outcomes, next_due_at: next?.toISOString() ?? null };
  }

  /** One batch: environments and unfinished runs read once per tenant, then each tick. */
  private async tickBatch(due: StoredScheduleDocument[]): Promise<Record<ScheduleTickOutcome, number>> {
    const outcomes = noOutcomes();
    const byTenant = new Map<string, StoredScheduleDocument[]>();
    for (const doc of due) {
      const own = byTenant.get(doc.tenant_id);
      if (own) own.push(doc);
      else byTenant.set(doc.tenant_id, [doc]);
    }
    const context = new Map<string, { environments: Map<string, Environment>; unfinished: Map<string, string> }>();
    await Promise.all(
      [...byTenant].map(async ([tenantId, docs]) => {
        const environmentIds = [...new Set(docs.map((doc) => doc.environment_id))];
        const [environments, unfinished] = await Promise.all([this.environments.findByIds(tenantId, environmentIds), this.runs.unfinishedScheduledRuns(tenantId, environmentIds)]);
        context.set(tenantId, { environments, unfinished });
      }),
    );
    let next = 0;
    const worker = async () => {
      while (next < due.length) {
        const doc = due[next++]!;
        const { environments, unfinished } = context.get(doc.tenant_id)!;
        const recorded = await this.tick(doc, environments.get(doc.environment_id), unfinished.get(`${doc.environment_id}:${doc.name}`));
        if (!recorded) continue;
        outcomes[recorded.outcome] += 1;
        outcomes.missed += recorded.missed;
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, due.length) }, worker));
    return outcomes;
  }

  /** One schedule's tick; the tick as recorded, or null when another pass recorded it (or its environment is gone). */
  private async tick(doc: StoredScheduleDocument, environment: Environment | undefined, unfinishedRunId: string | undefined): Promise<StoredTick | null> {
    if (!environment) {
      // Its environment is gone (a tear-down that raced an activation): nothing to tick.
      await this.schedules.removeOrphan(doc);
      return null;
    }
    const dueAt = doc.next_fire_at!;
    const cron = parseCronExpression(doc.cron);
    if (typeof cron === 'string') throw new Error(`schedule ${doc._id} has a cron that is not valid: ${cron}`);
    const now = Date.now();
    const plan = planTick(cron, doc.timezone, dueAt.getTime(), now);
    let outcome: StoredTick['outcome'];
    let runId: string | null = null;
    if (environment.schedules_paused || environment.status === 'deleting') {
      outcome = 'skipped_paused';
    } else if (unfinishedRunId !== undefined) {
      outcome = 'skipped_overlap';
      runId = unfinishedRunId;
    } else {
      const made = await this.runsService.createForTick(doc.tenant_id, environment, { schedule: doc.name, job: doc.job, key: tickKeyOf(plan.fireAt, doc.timezone) });
      runId = made.runId;
      outcome = made.result === 'paused' ? 'skipped_paused' : made.result === 'quota' ? 'skipped_quota' : Date.now() - plan.fireAt > LATE_TICK_MS ? 'late' : 'run_created';
    }
    const recordedAt = new Date();
    const tick: StoredTick = { fire_at: new Date(plan.fireAt), outcome, run_id: runId, lateness_ms: recordedAt.getTime() - plan.fireAt, missed: plan.missed, recorded_at: recordedAt };
    const recorded = await this.schedules.recordTick(doc, { dueAt, nextFireAt: plan.nextFireAt === null ? null : new Date(plan.nextFireAt), tick });
    if (!recorded) return null;
    this.metrics.scheduleTicks.inc({ outcome });
    if (plan.missed > 0) this.metrics.scheduleTicks.inc({ outcome: 'missed' }, plan.missed);
    return tick;
  }
}
