import type { Connection, QueryFilter } from 'mongoose';
import { EngineFence, inTransaction, type TenantScopedModel } from '@envengine/tenant-data';
import type { AttemptDocument } from './run.schema.ts';

/** How the engine runner's slots are shared out by one admission. */
export interface RunnerSharePolicy {
  /** The runner's slots in all (every replica's); Infinity admits every waiting attempt, oldest first. */
  capacity: number;
  /** The slots one tenant may hold at once; null for no cap beyond its fair share. */
  maxPerTenant: number | null;
}

/**
 * The slots one tenant may hold at once: `setting` when the operator gave a number, none
 * beyond the fair share for `all`, and by default the runner's slots less one (at least
 * one). A tenant so never holds every slot while another waits: a tenant with nothing
 * running finds one free, or takes the next that frees, whatever the first tenant's
 * backlog and however long its assets run (issue 68, docs/decisions.md).
 */
export function tenantSlotCap(capacity: number, setting: number | 'all' | undefined): number | null {
  if (setting === 'all') return null;
  if (setting !== undefined) return setting;
  return Number.isFinite(capacity) ? Math.max(1, capacity - 1) : null;
}

/** An admission takes at most this many attempts at once (the next one takes the rest). */
const MAX_ADMITTED_AT_ONCE = 500;

/** A local attempt that holds a runner slot: running, or admitted (or, from before admission, queued on the runner's queue). */
const HOLDS_A_SLOT: QueryFilter<AttemptDocument> = {
  executor: 'local',
  $or: [{ status: 'running' }, { status: 'queued', admitted_at: { $ne: null } }, { status: 'queued', enqueued_at: { $ne: null } }],
};

/** A local attempt waiting for a runner slot: queued, not held back by its environment's run limit, not yet admitted. */
const WAITS_FOR_A_SLOT = { executor: 'local', status: 'queued', waiting_for_slot: { $ne: true }, admitted_at: null, enqueued_at: null } satisfies QueryFilter<AttemptDocument>;

/**
 * The engine runner's fair shares (issue 35, docs/design.md#quotas-and-fair-shares). Local
 * attempts are not put on the runner's queue when they are made: each waits, off the
 * queue, until an admission gives it a slot. An admission fills the free slots one at a
 * time, each to the tenant that holds the fewest (its oldest waiting attempt; the oldest
 * first among tenants holding as many), skipping tenants at `maxPerTenant` (by default
 * the slots less one, `tenantSlotCap`). A tenant's backlog so never delays another
 * tenant's next attempt by more than one slot's time, however long it is: that attempt
 * takes the next slot that frees; and with the default cap one tenant alone never holds
 * them all, so another tenant's first attempt finds a slot free. The counts are of
 * stored attempts, across tenants and replicas, in one transaction fenced by a single
 * document, so two admissions never give the same slot twice.
 */
export class RunnerShares {
  private readonly fence: EngineFence;

  constructor(
    private readonly connection: Connection,
    private readonly attempts: TenantScopedModel<AttemptDocument>,
  ) {
    this.fence = new EngineFence(connection, 'runner-admission');
  }

  ensureIndexes(): Promise<void> {
    return this.fence.ensure();
  }

  /** Gives the runner's free slots to waiting attempts, fairly across tenants; the attempts admitted, which need their queue add. */
  admit(policy: RunnerSharePolicy): Promise<AttemptDocument[]> {
    return inTransaction(this.connection, async (session) => {
      await this.fence.write(session);
      const holding = await this.attempts.aggregateAcrossTenants<{ _id: string; slots: number }>(HOLDS_A_SLOT, [{ $group: { _id: '$tenant_id', slots: { $sum: 1 } } }], { session });
      const held = new Map(holding.map((tenant) => [tenant._id, tenant.slots]));
      const free = Math.min(policy.capacity - holding.reduce((sum, tenant) => sum + tenant.slots, 0), MAX_ADMITTED_AT_ONCE);
      if (free <= 0) return [];
      // Each tenant's oldest waiting attempts, as many as could be admitted (ids sort by creation).
      const waiting = await this.attempts.aggregateAcrossTenants<{ _id: string; ids: string[] }>(
        WAITS_FOR_A_SLOT,
        [{ $sort: { dispatched_at: 1, _id: 1 } }, { $group: { _id: '$tenant_id', ids: { $firstN: { input: '$_id', n: free } } } }],
        { session },
      );
      const picks = pickFairly(
        waiting.map((tenant) => ({ tenantId: tenant._id, ids: tenant.ids })),
        held,
        free,
        policy.maxPerTenant,
      );
      const now = new Date();
      const admitted: AttemptDocument[] = [];
      for (const { tenantId, attemptId } of picks) {
        const attempt = await this.attempts.findOneAndUpdate(tenantId, { _id: attemptId, ...WAITS_FOR_A_SLOT }, { $set: { admitted_at: now } }, { session });
        if (attempt) admitted.push(attempt);
      }
      return admitted;
    });
  }
}

/**
 * The attempts to admit into `free` slots: one at a time, to the tenant holding the fewest
 * slots that has an attempt waiting and is below `maxPerTenant`; among tenants holding as
 * many, the one whose next attempt is oldest. Pure, so the shares are tested without a database.
 */
export function pickFairly(
  waiting: ReadonlyArray<{ tenantId: string; ids: readonly string[] }>,
  held: ReadonlyMap<string, number>,
  free: number,
  maxPerTenant: number | null,
): Array<{ tenantId: string; attemptId: string }> {
  const queues = waiting.map((tenant) => ({ tenantId: tenant.tenantId, ids: tenant.ids, next: 0, holds: held.get(tenant.tenantId) ?? 0 }));
  const picks: Array<{ tenantId: string; attemptId: string }> = [];
  while (picks.length < free) {
    let chosen: (typeof queues)[number] | undefined;
    for (const queue of queues) {
      if (queue.next >= queue.ids.length || (maxPerTenant !== null && queue.holds >= maxPerTenant)) continue;
      if (!chosen || queue.holds < chosen.holds || (queue.holds === chosen.holds && queue.ids[queue.next]! < chosen.ids[chosen.next]!)) chosen = queue;
    }
    if (!chosen) break;
    picks.push({ tenantId: chosen.tenantId, attemptId: chosen.ids[chosen.next]! });
    chosen.next += 1;
    chosen.holds += 1;
  }
  return picks;
}
