import { Schema, type Connection, type Model } from 'mongoose';
import type { EventCause, EventOutbox } from '@envengine/event-log';
import { newId } from '@envengine/resource-ids';
import { ensureCollectionAndIndexes, isDuplicateKeyError } from '@envengine/service-kit';
import { inTransaction } from '@envengine/tenant-data';
import { generateToken, hashToken } from './token-codec.ts';

/** Revocations are broadcast on this Redis channel so gateways drop cached tokens at once. */
export const TOKEN_REVOKED_CHANNEL = 'envengine:api-tokens:revoked';

/** Each token's rate-limit buckets, shared by the gateways: the only Redis keys a gateway may touch. */
export const RATE_LIMIT_KEY_PREFIX = 'envengine:rate:';

/** The cause of what the admin command does: an operator (the token store has no API of its own). */
export const OPERATOR_CAUSE: EventCause = { actor: 'operator', requestId: null };

interface TenantDocument {
  _id: string;
  name: string;
  created_at: Date;
}

interface ApiTokenDocument {
  _id: string;
  tenant_id: string;
  label: string;
  token_hash: string;
  created_at: Date;
  revoked_at: Date | null;
}

export interface Tenant {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiTokenRecord {
  id: string;
  tenant_id: string;
  label: string;
  created_at: string;
  revoked_at: string | null;
}

export interface IssuedToken extends ApiTokenRecord {
  /** The token itself: shown once, never stored. */
  token: string;
}

export interface RevokedToken {
  record: ApiTokenRecord;
  /** For the revocation's broadcast to the gateways; never in an event. */
  tokenHash: string;
  /** False when the token had been revoked before: nothing changed and nothing was recorded. */
  revoked: boolean;
}

const tenantSchema = new Schema<TenantDocument>(
  {
    _id: { type: String, required: true },
    name: { type: String, required: true },
    created_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'tenants' },
);
tenantSchema.index({ name: 1 }, { unique: true });

const apiTokenSchema = new Schema<ApiTokenDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    label: { type: String, required: true },
    token_hash: { type: String, required: true },
    created_at: { type: Date, required: true },
    revoked_at: { type: Date, default: null },
  },
  { versionKey: false, collection: 'api_tokens' },
);
apiTokenSchema.index({ token_hash: 1 }, { unique: true });
apiTokenSchema.index({ tenant_id: 1 });

function toRecord(doc: ApiTokenDocument): ApiTokenRecord {
  return {
    id: doc._id,
    tenant_id: doc.tenant_id,
    label: doc.label,
    created_at: doc.created_at.toISOString(),
    revoked_at: doc.revoked_at ? doc.revoked_at.toISOString() : null,
  };
}

/**
 * Tenants and their API tokens, kept in the gateway's database. Issuing and revoking a
 * token record its event (`token.created`, `token.revoked`) in the gateway's outbox, in
 * the same transaction; the gateway's relay publishes it to the audit log.
 */
export class ApiTokenRepository {
  private readonly tenants: Model<TenantDocument>;
  private readonly tokens: Model<ApiTokenDocument>;

  /** `outbox`: the event outbox of the same connection (the gateway's database). */
  constructor(
    private readonly connection: Connection,
    private readonly outbox: EventOutbox,
  ) {
    this.tenants = connection.models.Tenant ?? connection.model<TenantDocument>('Tenant', tenantSchema);
    this.tokens = connection.models.ApiToken ?? connection.model<ApiTokenDocument>('ApiToken', apiTokenSchema);
  }

  /** Its collections and the outbox's, made before any transaction writes them. */
  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.tenants);
    await ensureCollectionAndIndexes(this.tokens);
    await this.outbox.ensureIndexes();
  }

  /** The tenant with this name, or undefined. */
  async findTenant(name: string): Promise<Tenant | undefined> {
    const existing = await this.tenants.findOne({ name }).lean();
    return existing ? { id: existing._id, name: existing.name, created_at: existing.created_at.toISOString() } : undefined;
  }

  /** The tenant with this name, created when it does not exist yet. */
  async ensureTenant(name: string): Promise<Tenant> {
    const existing = await this.tenants.findOne({ name }).lean();
    if (existing) return { id: existing._id, name: existing.name, created_at: existing.created_at.toISOString() };
    try {
      const created = await this.tenants.create({ _id: newId('ten'), name, created_at: new Date() });
      return { id: created._id, name: created.name, created_at: created.created_at.toISOString() };
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
      const raced = await this.tenants.findOne({ name }).lean();
      if (!raced) throw error;
      return { id: raced._id, name: raced.name, created_at: raced.created_at.toISOString() };
    }
  }

  /** A new token of the tenant, and its `token.created` event (the label only: never the token or its hash). */
  async issueToken(tenantId: string, label: string, cause: EventCause): Promise<IssuedToken> {
    const token = generateToken();
    const doc: ApiTokenDocument = {
      _id: newId('tok'),
      tenant_id: tenantId,
      label,
      token_hash: hashToken(token),
      created_at: new Date(),
      revoked_at: null,
    };
    await inTransaction(this.connection, async (session) => {
      await this.tokens.create([doc], { session });
      await this.outbox.record(
        tenantId,
        { type: 'token.created', environment: null, subject: { kind: 'token', id: doc._id }, cause, data: { label } },
        session,
      );
    });
    return { ...toRecord(doc), token };
  }

  /** The tenant a live token belongs to, or undefined for an unknown or revoked token. */
  async findActiveByHash(tokenHash: string): Promise<{ tokenId: string; tenantId: string } | undefined> {
    const doc = await this.tokens.findOne({ token_hash: tokenHash, revoked_at: null }, { _id: 1, tenant_id: 1 }).lean();
    return doc ? { tokenId: doc._id, tenantId: doc.tenant_id } : undefined;
  }

  /**
   * Marks an active token revoked and records `token.revoked`, in one transaction; a token
   * revoked before is left as it was (its revocation time kept) and records nothing.
   * Returns its hash so callers can broadcast the revocation; undefined for an unknown id.
   */
  async revoke(tokenId: string, cause: EventCause): Promise<RevokedToken | undefined> {
    return inTransaction(this.connection, async (session) => {
      const revoked = await this.tokens
        .findOneAndUpdate({ _id: tokenId, revoked_at: null }, { $set: { revoked_at: new Date() } }, { returnDocument: 'after', session })
        .lean();
      if (revoked) {
        await this.outbox.record(
          revoked.tenant_id,
          { type: 'token.revoked', environment: null, subject: { kind: 'token', id: revoked._id }, cause, data: { label: revoked.label } },
          session,
        );
        return { record: toRecord(revoked), tokenHash: revoked.token_hash, revoked: true };
      }
      const before = await this.tokens.findOne({ _id: tokenId }).session(session).lean();
      return before ? { record: toRecord(before), tokenHash: before.token_hash, revoked: false } : undefined;
    });
  }

  async list(): Promise<Array<ApiTokenRecord & { tenant_name: string }>> {
    const [tokens, tenants] = await Promise.all([
      this.tokens.find({}).sort({ _id: 1 }).lean(),
      this.tenants.find({}).lean(),
    ]);
    const names = new Map(tenants.map((tenant) => [tenant._id, tenant.name]));
    return tokens.map((doc) => ({ ...toRecord(doc), tenant_name: names.get(doc.tenant_id) ?? '?' }));
  }
}
