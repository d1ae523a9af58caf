import type { ClientSession, Connection } from 'mongoose';
import type { CreateEnvironmentRequest, Environment, Executor, PatchEnvironmentRequest } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { ApiError, environmentDeleting, isDuplicateKeyError, quotaExceeded } from '@envengine/service-kit';
import { fileStorageDirectoryOf, storagePrefixesOverlap, storagePrefixKey } from '@envengine/materialization-storage';
import { ENGINE_CAUSE, type EventCause, type EventOutbox, type NewEvent } from '@envengine/event-log';
import type { EventType } from '@envengine/contracts';
import { EngineFence, inTransaction, TenantScopedModel, type TenantQuotas } from '@envengine/tenant-data';
import { AdmissionStripes } from './admission-stripes.ts';
import { previewExpiry, type PreviewLifetimes } from './preview-expiry.ts';
import {
  environmentSchema,
  EXPIRED_ENVIRONMENT_DAYS,
  expiredEnvironmentSchema,
  type EnvironmentDocument,
  type ExpiredEnvironmentDocument,
} from './environment.schema.ts';

/** `/lake/a/b/` and every directory above it, each with its trailing slash. */
function directoryAndAncestors(directory: string): string[] {
  const segments = directory.split('/').filter((segment) => segment !== '');
  return segments.map((_, index) => `/${segments.slice(0, index + 1).join('/')}/`).concat('/');
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function toEnvironment(doc: EnvironmentDocument): Environment {
  return {
    id: doc._id,
    name: doc.name,
    kind: doc.kind,
    git_ref: doc.git_ref ?? null,
    storage_prefix: doc.storage_prefix,
    strict: doc.strict,
    schedules_paused: doc.schedules_paused,
    schedules_paused_reason: doc.schedules_paused_reason ?? null,
    executor: doc.executor,
    egress: doc.egress ?? 'none',
    active_deployment_id: doc.active_deployment_id ?? null,
    status: doc.status ?? 'active',
    ttl_hours: doc.ttl_hours ?? null,
    idle_ttl_hours: doc.idle_ttl_hours ?? null,
    expires_at: doc.expires_at ? doc.expires_at.toISOString() : null,
    purge_data_on_expiry: doc.purge_data_on_expiry ?? true,
    max_concurrent_runs: doc.max_concurrent_runs ?? null,
    parent: doc.parent?.name ?? null,
    inserted_at: doc.inserted_at.toISOString(),
  };
}

/** A preview's default storage prefix under its parent's (docs/design.md#previews-promotion-and-diffs). */
export function previewPrefixUnder(parentPrefix: string, name: string): string {
  return `${parentPrefix.replace(/\/+$/, '')}/previews/${name}`;
}

/** An event's environment and subject when the environment is what it is about. */
export function aboutEnvironment(doc: Pick<EnvironmentDocument, '_id' | 'name'>): Pick<NewEvent<EventType>, 'environment' | 'subject'> {
  return { environment: { id: doc._id, name: doc.name }, subject: { kind: 'environment', id: doc._id } };
}

const HOUR_MS = 3_600_000;

/** A stored preview's lifetimes, with `overrides` (a PATCH's, or a deploy's or run's times). */
function lifetimesOf(doc: Pick<EnvironmentDocument, 'ttl_hours' | 'idle_ttl_hours' | 'ttl_from' | 'last_active_at' | 'expires_at' | 'inserted_at'>, overrides: Partial<PreviewLifetimes> = {}): PreviewLifetimes {
  const ttlHours = doc.ttl_hours ?? null;
  // Made before the TTL's start was kept: it started a TTL before its stored expiry.
  const ttlFrom = doc.ttl_from ?? (doc.expires_at && ttlHours ? new Date(doc.expires_at.getTime() - ttlHours * HOUR_MS) : doc.inserted_at);
  return { ttlHours, ttlFrom, idleTtlHours: doc.idle_ttl_hours ?? null, lastActiveAt: doc.last_active_at ?? doc.inserted_at, ...overrides };
}

/** What a tear-down was asked to do (docs/design.md#environment-lifecycle). */
export interface TeardownRequest {
  force: boolean;
  purge_data: boolean;
  /** Who asked: a DELETE, or the TTL lapsing (`EXPIRY_REASON`). */
  reason: string;
}

/** The tear-down reason of a TTL that lapsed: its removal leaves an `environment_expired` record. */
export const EXPIRY_REASON = 'environment expired (ttl_hours)';

/** The environment as the tear-down sees it. */
export interface TeardownTarget {
  tenantId: string;
  environment: Environment;
  purgeData: boolean;
  /** Begun by the TTL lapsing: the expiry timer that began it ends by itself. */
  expired: boolean;
}

function teardownTarget(tenantId: string, doc: { teardown?: TeardownRequest | null } & Parameters<typeof toEnvironment>[0]): TeardownTarget {
  return { tenantId, environment: toEnvironment(doc), purgeData: doc.teardown?.purge_data ?? false, expired: doc.teardown?.reason === EXPIRY_REASON };
}

/**
 * Environments of one tenant at a time: every method takes the tenant id first, so no
 * query can be written without the tenant filter. Returns plain objects only.
 */
/** Why a new preview environment's schedules are paused. */
export const PREVIEW_PAUSE_REASON = 'preview environment: schedules start paused; resume to run them';

export class EnvironmentRepository {
  private readonly environments: TenantScopedModel<EnvironmentDocument>;
  private readonly stripes: AdmissionStripes;
  private readonly expired: TenantScopedModel<ExpiredEnvironmentDocument>;
  /** Written first by every create with a `file://` prefix: two creates take turns, so neither misses the other's directory. */
  private readonly directoryFence: EngineFence;

  /**
   * @param quotas the placement scope's per-tenant quota documents (environments).
   * @param outbox the placement scope's events, written in each change's transaction.
   */
  constructor(
    private readonly connection: Connection,
    private readonly quotas: TenantQuotas,
    readonly outbox: EventOutbox,
  ) {
    this.environments = TenantScopedModel.of(connection, 'Environment', environmentSchema);
    this.stripes = new AdmissionStripes(connection);
    this.expired = TenantScopedModel.of(connection, 'ExpiredEnvironment', expiredEnvironmentSchema);
    this.directoryFence = new EngineFence(connection, 'storage-directories');
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([this.environments.ensureIndexes(), this.stripes.ensureIndexes(), this.expired.ensureIndexes(), this.directoryFence.ensure()]);
    // Environments made before directories were recorded get theirs, so that new ones are checked against them too.
    const unrecorded = await this.environments.findAcrossTenants({ storage_prefix: /^file:/i, storage_directory: { $exists: false } }, { projection: { _id: 1, tenant_id: 1, storage_prefix: 1 }, limit: 100_000 });
    for (const doc of unrecorded) {
      await this.environments.updateOne(doc.tenant_id, { _id: doc._id }, { $set: { storage_directory: fileStorageDirectoryOf(doc.storage_prefix) } });
    }
  }

  /**
   * @param visible whether the caller's token sees an environment of this name: a refusal
   *   names the environment whose prefix overlaps only if it does.
   */
  async create(
    tenantId: string,
    input: CreateEnvironmentRequest & { storage_prefix: string },
    cause: EventCause,
    visible: (name: string) => boolean = () => false,
    parent: { id: string; name: string } | null = null,
  ): Promise<Environment> {
    const now = new Date();
    const fields: Omit<EnvironmentDocument, 'tenant_id'> = {
      _id: newId('env', now.getTime()),
      name: input.name,
      kind: input.kind,
      parent,
      storage_prefix: input.storage_prefix,
      strict: input.strict,
      executor: input.executor,
      egress: input.egress,
      // A preview never writes on a timer by surprise: its schedules wait for an explicit resume.
      schedules_paused: input.kind === 'preview',
      schedules_paused_reason: input.kind === 'preview' ? PREVIEW_PAUSE_REASON : null,
      active_deployment_id: null,
      git_ref: null,
      status: 'active',
      teardown: null,
      ttl_hours: input.ttl_hours ?? null,
      idle_ttl_hours: input.idle_ttl_hours ?? null,
      ttl_from: now,
      last_active_at: now,
      expires_at: previewExpiry({ ttlHours: input.ttl_hours ?? null, ttlFrom: now, idleTtlHours: input.idle_ttl_hours ?? null, lastActiveAt: now }),
      max_concurrent_runs: input.max_concurrent_runs ?? null,
      purge_data_on_expiry: input.purge_data_on_expiry,
      storage_directory: fileStorageDirectoryOf(input.storage_prefix),
      inserted_at: now,
      updated_at: now,
    };
    let doc: EnvironmentDocument;
    try {
      doc = await this.insertWithinQuota(tenantId, fields, cause, visible);
    } catch (error) {
      if (isDuplicateKeyError(error, 'name')) {
        throw new ApiError('environment_exists', `An environment named "${input.name}" already exists.`, {
          details: [{ path: 'name', message: 'is already taken' }],
        });
      }
      throw error;
    }
    return toEnvironment(doc);
  }

  /**
   * Inserts the environment unless the tenant has as many as its quota allows (429; one
   * being deleted still counts, its data is still held), or its prefix equals, contains or
   * lies inside one of the tenant's other environments' (409), or its `file://` prefix
   * contains, or lies inside, another tenant's environment's (409): their files would mix.
   */
  private async insertWithinQuota(
    tenantId: string,
    fields: Omit<EnvironmentDocument, 'tenant_id'>,
    cause: EventCause,
    visible: (name: string) => boolean,
  ): Promise<EnvironmentDocument> {
    return this.quotas.admission(tenantId, async (session, limits) => {
      const held = await this.environments.count(tenantId, {}, { session, limit: limits.environments });
      if (held >= limits.environments) throw quotaExceeded('environments', limits.environments, `You have ${held} environments already.`);
      if (fields.kind === 'preview') {
        const previews = await this.environments.count(tenantId, { kind: 'preview' }, { session, limit: limits.previews });
        if (previews >= limits.previews) throw quotaExceeded('previews', limits.previews, `You have ${previews} preview environments already; delete one, or give them a TTL (ttl_hours, idle_ttl_hours).`);
      }
      if (fields.parent) await this.fenceParent(tenantId, fields.parent, session);
      await this.checkPrefixIsOwn(tenantId, fields, session, visible);
      if (fields.storage_directory) await this.checkDirectoryIsFree(tenantId, fields, fields.storage_directory, session);
      const doc = await this.environments.insert(tenantId, fields, { session });
      await this.outbox.record(
        tenantId,
        { type: 'environment.created', ...aboutEnvironment(doc), cause, data: { executor: doc.executor, preview: doc.kind === 'preview' } },
        session,
      );
      return doc;
    });
  }

  /**
   * Refuses a prefix equal to, inside or around one of the tenant's environments' (a
   * deleting one's too: its purge may still be under way). Read in the admission's
   * transaction, after the tenant's quota document was written: two creates of one tenant
   * conflict on that document, so the second runs again with the first's environment in
   * view, and of two overlapping creates exactly one is made, across replicas.
   *
   * One exception (docs/design.md#previews-promotion-and-diffs): a preview with a `parent`
   * at a prefix under its parent's `previews/` folder overlaps its parent alone, by design
   * (its parent's purge removes only the parent's own materializations' files). Every other
   * overlap stays refused.
   */
  private async checkPrefixIsOwn(tenantId: string, fields: Pick<EnvironmentDocument, 'name' | 'storage_prefix' | 'parent'>, session: ClientSession, visible: (name: string) => boolean): Promise<void> {
    const prefix = fields.storage_prefix;
    // Bounded by the environments quota, counted just before.
    const others = await this.environments.find(tenantId, {}, { session, projection: { _id: 1, name: 1, storage_prefix: 1 } });
    // A name taken already is refused as such (409 environment_exists), by the insert.
    if (others.some((other) => other.name === fields.name)) return;
    const underOwnParent = (other: { _id: string; storage_prefix: string }) =>
      fields.parent?.id === other._id && storagePrefixKey(prefix).startsWith(storagePrefixKey(previewPrefixUnder(other.storage_prefix, '')));
    const overlapping = others.find((other) => storagePrefixesOverlap(prefix, other.storage_prefix) && !underOwnParent(other));
    if (!overlapping) return;
    // A token limited to other environments is not told the name (nor the prefix) of one outside them.
    const whose = visible(overlapping.name) ? `your environment "${overlapping.name}"'s (${overlapping.storage_prefix})` : 'that of another of your environments';
    throw new ApiError('storage_prefix_taken', `The storage prefix ${prefix} equals, contains or lies inside ${whose}: their files would mix, and a purge of one would remove the other's. Choose a prefix of its own.`, {
      details: [{ path: 'storage_prefix', message: 'overlaps the storage prefix of another of your environments' }],
    });
  }

  /**
   * A preview's parent, in the preview's create transaction: still active and not a
   * preview (read again here), and written (its admissions count), so that a delete of the
   * parent racing this create conflicts with it: either the delete sees the preview, or the
   * create sees the parent deleting (409 environment_deleting).
   */
  private async fenceParent(tenantId: string, parent: { id: string; name: string }, session: ClientSession): Promise<void> {
    const fenced = await this.environments.findOneAndUpdate(
      tenantId,
      { _id: parent.id, status: 'active', kind: 'persistent' },
      { $inc: { run_admissions: 1 } },
      { session, projection: { _id: 1 } },
    );
    if (!fenced) throw environmentDeleting(parent.name);
  }

  /** How many active previews name the environment as their parent. */
  async livePreviewsOf(tenantId: string, parentId: string, session?: ClientSession): Promise<Array<{ id: string; name: string }>> {
    const docs = await this.environments.find(tenantId, { 'parent.id': parentId, status: 'active' } as never, { session, projection: { _id: 1, name: 1 }, limit: 1000 });
    return docs.map((doc) => ({ id: doc._id, name: doc.name }));
  }

  /**
   * How many other environments (`except` the one given, active or deleting) have the
   * storage prefix `prefix` names (by `storagePrefixKey`): the tenant's own, and for a
   * `file://` prefix any tenant's of the same directory (the files are on one disk). Files
   * under such a prefix may be theirs, so a purge leaves them. Only environments made before
   * overlaps were refused can share a prefix.
   */
  async sharingPrefix(tenantId: string, except: string, prefix: string): Promise<number> {
    const key = storagePrefixKey(prefix);
    const own = await this.environments.find(tenantId, { _id: { $ne: except } }, { projection: { _id: 1, storage_prefix: 1 } });
    const directory = fileStorageDirectoryOf(prefix);
    const elsewhere = directory
      ? await this.environments.findAcrossTenants({ tenant_id: { $ne: tenantId }, storage_directory: { $in: [directory] } }, { limit: 1, projection: { _id: 1 } })
      : [];
    return own.filter((doc) => storagePrefixKey(doc.storage_prefix) === key).length + elsewhere.length;
  }

  /**
   * Refuses a `file://` prefix's `directory` that contains, or lies inside, another tenant's
   * environment's. The fence makes two such creates take turns, so neither misses the
   * other's directory.
   */
  private async checkDirectoryIsFree(tenantId: string, fields: Omit<EnvironmentDocument, 'tenant_id'>, directory: string, session: ClientSession): Promise<void> {
    await this.directoryFence.write(session);
    const [overlapping] = await this.environments.findAcrossTenants(
      {
        tenant_id: { $ne: tenantId },
        $or: [{ storage_directory: { $in: directoryAndAncestors(directory) } }, { storage_directory: { $regex: `^${escapeRegex(directory)}` } }],
      },
      { limit: 1, projection: { _id: 1 }, session },
    );
    if (overlapping) {
      throw new ApiError('storage_prefix_taken', `The storage prefix ${fields.storage_prefix} contains, or lies inside, another caller's storage prefix: choose a directory of your own.`, {
        details: [{ path: 'storage_prefix', message: "overlaps another caller's storage prefix" }],
      });
    }
  }

  async list(tenantId: string): Promise<Environment[]> {
    const docs = await this.environments.find(tenantId, {}, { sort: { _id: 1 } });
    return docs.map(toEnvironment);
  }

  async findByName(tenantId: string, name: string): Promise<Environment | undefined> {
    const doc = await this.environments.findOne(tenantId, { name });
    return doc ? toEnvironment(doc) : undefined;
  }

  /** When the tenant's preview of this name expired, if its TTL tore it down within the last week. */
  async expiredAt(tenantId: string, name: string): Promise<Date | undefined> {
    const [latest] = await this.expired.find(tenantId, { name, forget_at: { $gt: new Date() } }, { sort: { expired_at: -1 }, limit: 1 });
    return latest?.expired_at;
  }

  /** The tenant's environments of these ids, by id (those that exist). */
  async findByIds(tenantId: string, ids: string[], session?: ClientSession): Promise<Map<string, Environment>> {
    const docs = await this.environments.find(tenantId, { _id: { $in: ids } }, { session });
    return new Map(docs.map((doc) => [doc._id, toEnvironment(doc)]));
  }

  /** A batch of ticks' fence (`admitRun` for many environments at once): the admission count of each that admits scheduled runs, written. */
  fenceScheduledRuns(tenantId: string, ids: string[], session: ClientSession): Promise<number> {
    return this.environments.updateMany(tenantId, { _id: { $in: ids }, status: 'active', schedules_paused: false }, { $inc: { run_admissions: 1 } }, { session });
  }

  /**
   * Records `environment.expiring` for the expiry `expiresAt`, once: only while it is still the
   * environment's expiry and it is active (the precondition is the update's filter, so a
   * retried notice, or a deploy that moved the expiry meanwhile, records nothing).
   */
  noticeExpiry(tenantId: string, id: string, expiresAt: Date): Promise<boolean> {
    return inTransaction(this.connection, async (session) => {
      const noticed = await this.environments.findOneAndUpdate(
        tenantId,
        { _id: id, status: 'active', expires_at: expiresAt, expiry_noticed_for: { $ne: expiresAt } },
        { $set: { expiry_noticed_for: expiresAt } },
        { session },
      );
      if (!noticed) return false;
      await this.outbox.record(tenantId, { type: 'environment.expiring', ...aboutEnvironment(noticed), cause: ENGINE_CAUSE, data: { expires_at: expiresAt.toISOString() } }, session);
      return true;
    });
  }

  async findById(tenantId: string, id: string): Promise<Environment | undefined> {
    const doc = await this.environments.findOne(tenantId, { _id: id });
    return doc ? toEnvironment(doc) : undefined;
  }

  /** The executor a new attempt is placed on, read inside the caller's transaction. */
  async executorOf(tenantId: string, id: string, session?: ClientSession): Promise<Executor | undefined> {
    const doc = await this.environments.findOne(tenantId, { _id: id }, { projection: { executor: 1 }, session });
    return doc?.executor;
  }

  /**
   * Admits a run inside the caller's transaction: refused while the environment is being
   * deleted. A write is the fence, so that a tear-down racing the transaction conflicts with it instead of
   * passing it unseen (a transaction's reads alone do not conflict with anything): a manual
   * run writes one of the environment's admission stripes, which a tear-down closes all of;
   * any run under a run limit writes the environment's own document (admissions under a
   * limit must take turns; a batch of ticks writes it too, `fenceScheduledRuns`). Returns
   * the environment's run limit, or why the run is refused.
   */
  async admitRun(
    tenantId: string,
    id: string,
    trigger: 'manual' | 'slot',
    session: ClientSession,
  ): Promise<{ admitted: true; maxConcurrentRuns: number | null; striped: boolean } | { admitted: false; why: 'deleting' | 'missing' }> {
    if (trigger === 'manual') {
      if (await this.stripes.admit(tenantId, id, session)) {
        const current = await this.environments.findOne(tenantId, { _id: id }, { session, projection: { max_concurrent_runs: 1 } });
        if (current && (current.max_concurrent_runs ?? null) === null) return { admitted: true, maxConcurrentRuns: null, striped: true };
      }
    }
    const doc = await this.environments.findOneAndUpdate(
      tenantId,
      { _id: id, status: 'active' },
      { $inc: { run_admissions: 1 } },
      { session, projection: { max_concurrent_runs: 1 } },
    );
    if (doc) return { admitted: true, maxConcurrentRuns: doc.max_concurrent_runs ?? null, striped: false };
    const current = await this.environments.findOne(tenantId, { _id: id }, { session, projection: { status: 1 } });
    return { admitted: false, why: current ? 'deleting' : 'missing' };
  }

  /**
   * Opens the environment's admission stripes, made on its first manual run (an
   * environment that never runs has none). In a transaction that writes the environment's
   * document with `status: active` in its filter, so a tear-down's mark and this conflict:
   * no stripe is ever opened on a deleting environment. Idempotent.
   */
  async openStripes(tenantId: string, id: string): Promise<void> {
    await inTransaction(this.connection, async (session) => {
      const { matched } = await this.environments.updateOne(tenantId, { _id: id, status: 'active' }, { $inc: { run_admissions: 1 } }, { session });
      if (matched === 1) await this.stripes.openIfNone(tenantId, id, session);
    });
  }

  /** The environment's run limit as the caller's transaction sees it; null for none. */
  async limitOf(tenantId: string, id: string, session: ClientSession): Promise<number | null> {
    const doc = await this.environments.findOne(tenantId, { _id: id }, { session, projection: { max_concurrent_runs: 1 } });
    return doc?.max_concurrent_runs ?? null;
  }

  /**
   * The settings of a PATCH, in one update whose filter is its precondition: the
   * environment is active, and a TTL is set only on a preview. A TTL set or changed runs
   * from now; `null` removes it.
   */
  async patch(tenantId: string, name: string, patch: PatchEnvironmentRequest, cause: EventCause): Promise<Environment | undefined> {
    const now = new Date();
    const settingTtl = (patch.ttl_hours !== undefined && patch.ttl_hours !== null) || (patch.idle_ttl_hours !== undefined && patch.idle_ttl_hours !== null);
    const changingTtl = patch.ttl_hours !== undefined || patch.idle_ttl_hours !== undefined;
    const doc = await inTransaction(this.connection, async (session) => {
      // The expiry follows both lifetimes: read in the transaction that writes it (a deploy or run in between conflicts with the write).
      const current = changingTtl ? await this.environments.findOne(tenantId, { name, status: 'active' }, { session }) : null;
      const lifetimes = current
        ? lifetimesOf(current, {
            ...(patch.ttl_hours === undefined ? {} : { ttlHours: patch.ttl_hours, ttlFrom: now }),
            ...(patch.idle_ttl_hours === undefined ? {} : { idleTtlHours: patch.idle_ttl_hours, lastActiveAt: now }),
          })
        : null;
      const updated = await this.environments.findOneAndUpdate(
        tenantId,
        { name, status: 'active', ...(settingTtl ? { kind: 'preview' } : {}) },
        {
          $set: {
            ...(patch.egress === undefined ? {} : { egress: patch.egress }),
            ...(patch.strict === undefined ? {} : { strict: patch.strict }),
            ...(patch.ttl_hours === undefined ? {} : { ttl_hours: patch.ttl_hours, ttl_from: now }),
            ...(patch.idle_ttl_hours === undefined ? {} : { idle_ttl_hours: patch.idle_ttl_hours, last_active_at: now }),
            ...(lifetimes ? { expires_at: previewExpiry(lifetimes) } : {}),
            ...(patch.max_concurrent_runs === undefined ? {} : { max_concurrent_runs: patch.max_concurrent_runs }),
            updated_at: now,
          },
        },
        { session },
      );
      if (updated) {
        await this.outbox.record(tenantId, { type: 'environment.updated', ...aboutEnvironment(updated), cause, data: { fields: Object.keys(patch).sort() } }, session);
      }
      return updated;
    });
    if (doc) return toEnvironment(doc);
    const current = await this.findByName(tenantId, name);
    if (current?.status === 'active' && settingTtl) {
      const field = patch.ttl_hours !== undefined && patch.ttl_hours !== null ? 'ttl_hours' : 'idle_ttl_hours';
      throw new ApiError('invalid_request', `${field} is only for preview environments: a persistent environment never expires.`, {
        details: [{ path: field, message: 'is only for preview environments' }],
      });
    }
    return this.refuseChange(current, name);
  }

  /**
   * A deploy starts a preview's TTL again and counts as activity (its idle lifetime starts
   * again too); an environment without a TTL is returned as it is.
   */
  async extendTtl(tenantId: string, name: string): Promise<Environment | undefined> {
    const current = await this.environments.findOne(tenantId, { name });
    if (!current) return undefined;
    if (current.status !== 'active') throw environmentDeleting(name);
    if (!current.ttl_hours && !current.idle_ttl_hours) return toEnvironment(current);
    const now = new Date();
    // The TTLs read above are the precondition: a PATCH in between wins, and this deploy's extension is recomputed.
    const doc = await this.environments.findOneAndUpdate(
      tenantId,
      { _id: current._id, status: 'active', ttl_hours: current.ttl_hours, idle_ttl_hours: current.idle_ttl_hours ?? null },
      { $set: { ttl_from: now, last_active_at: now, expires_at: previewExpiry(lifetimesOf(current, { ttlFrom: now, lastActiveAt: now })), updated_at: now } },
    );
    return doc ? toEnvironment(doc) : this.extendTtl(tenantId, name);
  }

  /**
   * A run of a preview with an idle lifetime: its idle lapse moves to that lifetime from
   * now, never past its TTL. Later only (`$max`): two runs at once leave the later.
   */
  async touchActivity(tenantId: string, environmentId: string): Promise<void> {
    const current = await this.environments.findOne(tenantId, { _id: environmentId, status: 'active' });
    if (!current?.idle_ttl_hours) return;
    const now = new Date();
    const expiresAt = previewExpiry(lifetimesOf(current, { lastActiveAt: now }));
    // A PATCH or deploy in between set its own lifetimes (and their expiry): this changes nothing then.
    await this.environments.updateOne(
      tenantId,
      { _id: current._id, status: 'active', ttl_hours: current.ttl_hours, idle_ttl_hours: current.idle_ttl_hours, ttl_from: current.ttl_from ?? null },
      { $max: { last_active_at: now, ...(expiresAt ? { expires_at: expiresAt } : {}) } } as never,
    );
  }

  /**
   * Marks the environment `deleting` inside the caller's transaction; false when it is not
   * active (already deleting, or gone). `expiredBy` makes it conditional on the TTL having
   * lapsed by then (a deploy may have moved it).
   */
  async markDeleting(tenantId: string, id: string, request: TeardownRequest, session: ClientSession, cause: EventCause, expiredBy?: Date): Promise<boolean> {
    // Read in the transaction that writes the environment: a preview made meanwhile wrote it too (`fenceParent`).
    const previews = await this.livePreviewsOf(tenantId, id, session);
    if (previews.length > 0) {
      const names = previews.slice(0, 5).map((preview) => `"${preview.name}"`).join(', ');
      throw new ApiError('environment_has_previews', `It has ${previews.length} live preview${previews.length === 1 ? '' : 's'} (${names}${previews.length > 5 ? ', …' : ''}); delete ${previews.length === 1 ? 'it' : 'them'} first, or delete with ?force=true to tear ${previews.length === 1 ? 'it' : 'them'} down too.`);
    }
    const marked = await this.environments.findOneAndUpdate(
      tenantId,
      { _id: id, status: 'active', ...(expiredBy ? { expires_at: { $lte: expiredBy } } : {}) },
      { $set: { status: 'deleting', teardown: { ...request, requested_at: new Date() }, updated_at: new Date() }, $inc: { run_admissions: 1 } },
      { session, projection: { _id: 1, name: 1 } },
    );
    if (!marked) return false;
    await this.outbox.record(
      tenantId,
      { type: 'environment.deleted', ...aboutEnvironment(marked), cause, data: { purge_data: request.purge_data, expired: request.reason === EXPIRY_REASON } },
      session,
    );
    // Every stripe written (and closed): each run admitted through one conflicts with this.
    await this.stripes.closeAll(tenantId, id, session);
    return true;
  }

  /** What the tear-down of a deleting environment was asked to do; undefined unless it is deleting. */
  async teardownOf(tenantId: string, id: string): Promise<TeardownTarget | undefined> {
    const doc = await this.environments.findOne(tenantId, { _id: id, status: 'deleting' });
    return doc ? teardownTarget(tenantId, doc) : undefined;
  }

  /** Environments whose tear-down began, of every tenant: resumed at start-up. */
  async allDeleting(limit: number): Promise<TeardownTarget[]> {
    const docs = await this.environments.findAcrossTenants({ status: 'deleting' }, { limit });
    return docs.map((doc) => teardownTarget(doc.tenant_id, doc));
  }

  /** Active environments with an expiry, of every tenant: their timers are armed again at start-up. */
  async allExpiring(limit: number): Promise<Array<{ tenantId: string; environment: Environment }>> {
    const docs = await this.environments.findAcrossTenants({ status: 'active', expires_at: { $type: 'date' } }, { limit });
    return docs.map((doc) => ({ tenantId: doc.tenant_id, environment: toEnvironment(doc) }));
  }

  /** The tear-down's last step: the document goes, and the name is free again. Only a deleting environment is removed. */
  /**
   * Removes the document of an environment being deleted. One its TTL tore down leaves, in
   * the same transaction, the record that answers `environment_expired` for its name.
   */
  async removeDeleting(tenantId: string, id: string): Promise<boolean> {
    const removed = await inTransaction(this.connection, async (session) => {
      const doc = await this.environments.findOneAndDelete(tenantId, { _id: id, status: 'deleting' }, { session });
      if (!doc) return false;
      if (doc.teardown?.reason === EXPIRY_REASON) {
        const expiredAt = doc.expires_at ?? doc.teardown.requested_at;
        const forgetAt = new Date(expiredAt.getTime() + EXPIRED_ENVIRONMENT_DAYS * 24 * HOUR_MS);
        await this.expired.updateOne(tenantId, { _id: id }, { $set: { name: doc.name, expired_at: expiredAt, forget_at: forgetAt } }, { upsert: true, session });
      }
      return true;
    });
    // Stripes go after the document: a step repeated after a crash finds the document gone and removes them still.
    if (!(await this.environments.findOne(tenantId, { _id: id }, { projection: { _id: 1 } }))) await this.stripes.removeAll(tenantId, id);
    return removed;
  }

  async setExecutor(tenantId: string, name: string, executor: Executor, cause: EventCause): Promise<Environment | undefined> {
    return this.update(tenantId, name, { executor }, (before) =>
      before.executor === executor ? null : { type: 'placement.changed', ...aboutEnvironment(before), cause, data: { executor, previous: before.executor } },
    );
  }

  /** Sets the executor of every active environment the tenant owns, with an event for each it changed; returns them all. */
  async setExecutorForAll(tenantId: string, executor: Executor, cause: EventCause): Promise<Environment[]> {
    await inTransaction(this.connection, async (session) => {
      const changing = await this.environments.find(tenantId, { status: 'active', executor: { $ne: executor } }, { session, projection: { _id: 1, name: 1, executor: 1 } });
      if (changing.length === 0) return;
      await this.environments.updateMany(tenantId, { _id: { $in: changing.map((doc) => doc._id) }, status: 'active' }, { $set: { executor, updated_at: new Date() } }, { session });
      await this.outbox.recordMany(
        tenantId,
        changing.map((doc) => ({ type: 'placement.changed', ...aboutEnvironment(doc), cause, data: { executor, previous: doc.executor } })),
        session,
      );
    });
    return this.list(tenantId);
  }

  /** Pausing again without a reason keeps the reason already given, so a repeat changes nothing (and records nothing). */
  async pauseSchedules(tenantId: string, name: string, reason: string | undefined, cause: EventCause): Promise<Environment | undefined> {
    return this.update(
      tenantId,
      name,
      reason === undefined ? { schedules_paused: true } : { schedules_paused: true, schedules_paused_reason: reason },
      (before) => (before.schedules_paused ? null : { type: 'schedules.paused', ...aboutEnvironment(before), cause, data: {} }),
    );
  }

  /**
   * Clears the pause flag; when it was set, `alsoIn` runs in the same transaction (the
   * stored schedules move to their next fire time after now, so nothing missed while paused
   * fires).
   */
  async resumeSchedules(tenantId: string, name: string, cause: EventCause, alsoIn: (environmentId: string, session: ClientSession) => Promise<void>): Promise<Environment | undefined> {
    const doc = await inTransaction(this.connection, async (session) => {
      const before = await this.environments.findOneAndUpdate(
        tenantId,
        { name, status: 'active' },
        { $set: { schedules_paused: false, schedules_paused_reason: null, updated_at: new Date() } },
        { session, returnDocument: 'before' },
      );
      if (!before) return null;
      // A resume of schedules that are not paused changes nothing: moving them would drop a
      // tick that is due and not yet taken, with no outcome recorded for it.
      if (before.schedules_paused) {
        await alsoIn(before._id, session);
        await this.outbox.record(tenantId, { type: 'schedules.resumed', ...aboutEnvironment(before), cause, data: {} }, session);
      }
      return { ...before, schedules_paused: false, schedules_paused_reason: null };
    });
    return doc ? toEnvironment(doc) : this.refuseChange(await this.findByName(tenantId, name), name);
  }

  /**
   * Runs `work` in a transaction that holds the environment active: the environment's own
   * document is written first, so a `deleting` mark made meanwhile conflicts with it (one of
   * the two runs again, and sees the other). Undefined when the environment is gone; 409
   * `environment_deleting` once its tear-down began, whose steps then remove what `work`
   * would have left.
   */
  async whileActive<T>(tenantId: string, id: string, work: (session: ClientSession) => Promise<T>): Promise<T | undefined> {
    let deleting: Environment | undefined;
    const done = await inTransaction(this.connection, async (session) => {
      const held = await this.environments.findOneAndUpdate(tenantId, { _id: id, status: 'active' }, { $set: { updated_at: new Date() } }, { session });
      if (held) return { value: await work(session) };
      deleting = undefined;
      const current = await this.environments.findOne(tenantId, { _id: id }, { session });
      if (current) deleting = toEnvironment(current);
      return undefined;
    });
    if (done) return done.value;
    if (deleting) throw environmentDeleting(deleting.name);
    return undefined;
  }

  /** Points the environment at a deployment; `git_ref` follows its git sha. */
  async setActiveDeployment(tenantId: string, name: string, deploymentId: string, gitRef: string): Promise<Environment | undefined> {
    return this.update(tenantId, name, { active_deployment_id: deploymentId, git_ref: gitRef });
  }

  /**
   * A change to an active environment; a deleting one answers 409 `environment_deleting`.
   * `eventOf` names the change's event from the document before it (null: nothing changed
   * that a user follows), written in the change's transaction.
   */
  private async update(
    tenantId: string,
    name: string,
    fields: Partial<Pick<EnvironmentDocument, 'executor' | 'schedules_paused' | 'schedules_paused_reason' | 'active_deployment_id' | 'git_ref'>>,
    eventOf?: (before: EnvironmentDocument) => NewEvent<EventType> | null,
  ): Promise<Environment | undefined> {
    const change = { $set: { ...fields, updated_at: new Date() } };
    const doc = eventOf
      ? await inTransaction(this.connection, async (session) => {
          const before = await this.environments.findOneAndUpdate(tenantId, { name, status: 'active' }, change, { session, returnDocument: 'before' });
          if (!before) return null;
          const event = eventOf(before);
          if (event) await this.outbox.record(tenantId, event, session);
          return { ...before, ...change.$set };
        })
      : await this.environments.findOneAndUpdate(tenantId, { name, status: 'active' }, change);
    return doc ? toEnvironment(doc) : this.refuseChange(await this.findByName(tenantId, name), name);
  }

  /** Why an update matched nothing: the environment is gone (undefined, for a 404) or deleting (409). */
  private refuseChange(current: Environment | undefined, name: string): undefined {
    if (current?.status === 'deleting') throw environmentDeleting(name);
    return undefined;
  }
}
