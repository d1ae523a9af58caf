import { Schema } from 'mongoose';
import type { Egress, EnvironmentKind, EnvironmentStatus, Executor } from '@envengine/contracts';

/** An environment as stored: one document per (tenant, name). */
export interface EnvironmentDocument {
  _id: string;
  tenant_id: string;
  name: string;
  kind: EnvironmentKind;
  storage_prefix: string;
  strict: boolean;
  executor: Executor;
  egress: Egress;
  schedules_paused: boolean;
  schedules_paused_reason: string | null;
  active_deployment_id: string | null;
  git_ref: string | null;
  /** `deleting` from the moment a tear-down is accepted until the document is removed. */
  status: EnvironmentStatus;
  /** What the tear-down was asked to do; null while active. */
  teardown: { force: boolean; purge_data: boolean; requested_at: Date; reason: string } | null;
  ttl_hours: number | null;
  /** A preview's idle lifetime (absent: none). */
  idle_ttl_hours?: number | null;
  /** When the `ttl_hours` lifetime started: its creation, last deploy or the PATCH that set it (absent on environments made before: `expires_at` less the TTL). */
  ttl_from?: Date | null;
  /** Its last creation, deploy or run: where the idle lifetime starts (absent: its creation). */
  last_active_at?: Date | null;
  /** The earlier of the two lapses (`previewExpiry`). */
  expires_at: Date | null;
  /** Whether the TTL's tear-down purges the files; absent on environments made before it existed (true). */
  purge_data_on_expiry?: boolean;
  /** The expiry whose `environment.expiring` was recorded (a deploy moving the expiry arms a new notice). */
  expiry_noticed_for?: Date | null;
  max_concurrent_runs: number | null;
  /** A preview's parent (absent or null: none), whose bindings and secrets it inherits. */
  parent?: { id: string; name: string } | null;
  /** A `file://` prefix's directory with a trailing slash (`fileStorageDirectoryOf`), to find overlaps; null for another scheme. */
  storage_directory?: string | null;
  /**
   * Runs admitted (created, or given a slot): written by each admission so that a racing
   * pause, tear-down or second admission conflicts with it instead of passing it unseen.
   */
  run_admissions?: number;
  inserted_at: Date;
  updated_at: Date;
}

export const environmentSchema = new Schema<EnvironmentDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    name: { type: String, required: true },
    kind: { type: String, required: true, enum: ['persistent', 'preview'] },
    storage_prefix: { type: String, required: true },
    strict: { type: Boolean, required: true },
    executor: { type: String, required: true, enum: ['local', 'remote'] },
    // Environments made before egress existed had none.
    egress: { type: String, required: true, enum: ['none', 'public'], default: 'none' },
    schedules_paused: { type: Boolean, required: true },
    schedules_paused_reason: { type: String, default: null },
    active_deployment_id: { type: String, default: null },
    git_ref: { type: String, default: null },
    status: { type: String, required: true, enum: ['active', 'deleting'], default: 'active' },
    teardown: { type: Schema.Types.Mixed, default: null },
    ttl_hours: { type: Number, default: null },
    idle_ttl_hours: { type: Number, default: null },
    ttl_from: { type: Date, default: null },
    last_active_at: { type: Date, default: null },
    expires_at: { type: Date, default: null },
    purge_data_on_expiry: { type: Boolean, default: true },
    expiry_noticed_for: { type: Date, default: null },
    parent: { type: { _id: false, id: String, name: String }, default: null },
    max_concurrent_runs: { type: Number, default: null },
    storage_directory: { type: String, default: null },
    run_admissions: { type: Number, default: 0 },
    inserted_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'environments' },
);

// Names are unique per caller; two tenants may both own `prod`.
environmentSchema.index({ tenant_id: 1, name: 1 }, { unique: true });
// A tenant's listing, in creation order.
environmentSchema.index({ tenant_id: 1, _id: 1 });
// Tear-downs to resume, and expiry timers to re-arm, after a restart.
environmentSchema.index({ status: 1 }, { partialFilterExpression: { status: 'deleting' } });
// A parent's previews (a delete of the parent is refused, or tears them down first).
environmentSchema.index({ tenant_id: 1, 'parent.id': 1 }, { partialFilterExpression: { 'parent.id': { $type: 'string' } } });
environmentSchema.index({ expires_at: 1 }, { partialFilterExpression: { expires_at: { $type: 'date' } } });
// Overlapping file:// prefixes, across tenants.
environmentSchema.index({ storage_directory: 1 }, { partialFilterExpression: { storage_directory: { $type: 'string' } } });

/**
 * One of an environment's admission stripes, made at its first manual run: a manual run's
 * transaction writes one, at random, and a tear-down's mark writes them all (closing them). So a run racing a delete
 * conflicts with it, while runs of one environment rarely conflict with each other, as
 * they would if each wrote the environment's own document.
 */
export interface AdmissionStripeDocument {
  /** `<environment id>:<stripe>` */
  _id: string;
  tenant_id: string;
  environment_id: string;
  open: boolean;
  admitted: number;
}

/** Stripes per environment: creations at 30 in flight rarely pick the same one. */
export const ADMISSION_STRIPES = 256;

export const admissionStripeSchema = new Schema<AdmissionStripeDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    open: { type: Boolean, required: true },
    admitted: { type: Number, required: true },
  },
  { versionKey: false, collection: 'environment_admission_stripes' },
);
admissionStripeSchema.index({ tenant_id: 1, environment_id: 1 });

/**
 * A preview environment its TTL tore down, kept for `EXPIRED_ENVIRONMENT_DAYS` after its
 * removal so that its name answers 404 `environment_expired` with the expiry, not a bare
 * `not_found`. Written in the transaction that removes the environment's document.
 */
export interface ExpiredEnvironmentDocument {
  /** The environment's id. */
  _id: string;
  tenant_id: string;
  name: string;
  expired_at: Date;
  /** When MongoDB's TTL monitor removes the record. */
  forget_at: Date;
}

/** How long an expired preview's name answers `environment_expired`. */
export const EXPIRED_ENVIRONMENT_DAYS = 7;

export const expiredEnvironmentSchema = new Schema<ExpiredEnvironmentDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    name: { type: String, required: true },
    expired_at: { type: Date, required: true },
    forget_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'expired_environments' },
);
expiredEnvironmentSchema.index({ tenant_id: 1, name: 1, expired_at: -1 });
expiredEnvironmentSchema.index({ forget_at: 1 }, { expireAfterSeconds: 0 });
