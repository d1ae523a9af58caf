import { Schema, type ClientSession, type Connection, type Model } from 'mongoose';
import { Scope, roleOf, scopesInOrder, type ApiToken, type Role } from '@envengine/contracts';
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
  /** Written by every mint, so that two mints of one tenant conflict and the count of live tokens holds its limit. */
  token_mints?: number;
}

interface ApiTokenDocument {
  _id: string;
  tenant_id: string;
  label: string;
  token_hash: string;
  created_at: Date;
  revoked_at: Date | null;
  /** Absent on a token made before scopes: it has all of them, as it always had. */
  scopes?: Scope[];
  /** The environments it is limited to (names and `prefix*`), or null for every one. */
  environments?: string[] | null;
  /** The token that minted it; null for the operator's admin command. */
  created_by?: string | null;
  expires_at?: Date | null;
  last_used_at?: Date | null;
}

/** What a token may do, as the gateway checks it on each request. */
export interface TokenGrant {
  scopes: Scope[];
  /** Null for every environment of the tenant. */
  environments: string[] | null;
  expiresAt: Date | null;
}

/** A live token as the gateway resolves it. */
export interface ActiveToken {
  tokenId: string;
  tenantId: string;
  scopes: Scope[];
  environments: string[] | null;
  /** Epoch milliseconds, or null for a token that does not expire. */
  expiresAt: number | null;
}

/** A tenant already holds as many live tokens as it may (`tokens_quota_exceeded`). */
export class TokenLimitReached extends Error {
  constructor(readonly limit: number) {
    super(`the tenant holds ${limit} live tokens, its limit`);
  }
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
    scopes: { type: [String], default: undefined },
    environments: { type: [String], default: undefined },
    created_by: { type: String, default: null },
    expires_at: { type: Date, default: null },
    last_used_at: { type: Date, default: null },
  },
  { versionKey: false, collection: 'api_tokens' },
);
apiTokenSchema.index({ token_hash: 1 }, { unique: true });
apiTokenSchema.index({ tenant_id: 1 });
tenantSchema.add({ token_mints: { type: Number, default: undefined } });

function toRecord(doc: ApiTokenDocument): ApiTokenRecord {
  return {
    id: doc._id,
    tenant_id: doc.tenant_id,
    label: doc.label,
    created_at: doc.created_at.toISOString(),
    revoked_at: doc.revoked_at ? doc.revoked_at.toISOString() : null,
  };
}

function scopesOf(doc: Pick<ApiTokenDocument, 'scopes'>): Scope[] {
  return doc.scopes ? scopesInOrder(doc.scopes) : [...Scope.options];
}

/** A token as the public API shows it: never the token or its hash. */
export function toApiToken(doc: ApiTokenDocument): ApiToken {
  const scopes = scopesOf(doc);
  return {
    id: doc._id,
    name: doc.label,
    role: roleOf(scopes),
    scopes,
    environments: doc.environments ?? null,
    created_at: doc.created_at.toISOString(),
    created_by: doc.created_by ?? null,
    last_used_at: doc.last_used_at ? doc.last_used_at.toISOString() : null,
    expires_at: doc.expires_at ? doc.expires_at.toISOString() : null,
  };
}

/** A token's grant, as stored: the event's data and the list show it. */
function grantData(grant: TokenGrant): { scopes: Scope[]; role: Role | null; environments: string[] | null; expires_at: string | null } {
  return { scopes: grant.scopes, role: roleOf(grant.scopes), environments: grant.environments, expires_at: grant.expiresAt?.toISOString() ?? null };
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

  /**
   * A new admin token of the tenant (the operator's admin command), and its `token.created`
   * event (its name and grant only: never the token or its hash).
   */
  async issueToken(tenantId: string, label: string, cause: EventCause): Promise<IssuedToken> {
    const { doc, token } = await inTransaction(this.connection, (session) =>
      this.insert(session, tenantId, label, { scopes: [...Scope.options], environments: null, expiresAt: null }, null, cause),
    );
    return { ...toRecord(doc), token };
  }

  /**
   * A token minted by another of the tenant's tokens (`POST /api/v1/tokens`): the caller has
   * checked that the grant is within its own. Refused with TokenLimitReached when the tenant
   * holds `limit` live tokens (unexpired and not revoked); the tenant's document is written
   * first, so that two mints at once conflict and one counts again.
   */
  async mint(
    tenantId: string,
    name: string,
    grant: TokenGrant,
    createdBy: string,
    cause: EventCause,
    limit: number,
  ): Promise<{ token: string; record: ApiToken }> {
    const { doc, token } = await inTransaction(this.connection, async (session) => {
      await this.tenants.updateOne({ _id: tenantId }, { $inc: { token_mints: 1 } }, { session });
      const now = new Date();
      const live = await this.tokens
        .countDocuments({ tenant_id: tenantId, revoked_at: null, $or: [{ expires_at: null }, { expires_at: { $gt: now } }] })
        .session(session);
      if (live >= limit) throw new TokenLimitReached(limit);
      return this.insert(session, tenantId, name, grant, createdBy, cause);
    });
    return { token, record: toApiToken(doc) };
  }

  private async insert(
    session: ClientSession,
    tenantId: string,
    label: string,
    grant: TokenGrant,
    createdBy: string | null,
    cause: EventCause,
  ): Promise<{ doc: ApiTokenDocument; token: string }> {
    const token = generateToken();
    const doc: ApiTokenDocument = {
      _id: newId('tok'),
      tenant_id: tenantId,
      label,
      token_hash: hashToken(token),
      created_at: new Date(),
      revoked_at: null,
      scopes: scopesInOrder(grant.scopes),
      environments: grant.environments,
      created_by: createdBy,
      expires_at: grant.expiresAt,
      last_used_at: null,
    };
    await this.tokens.create([doc], { session });
    await this.outbox.record(
      tenantId,
      { type: 'token.created', environment: null, subject: { kind: 'token', id: doc._id }, cause, data: { label, ...grantData(grant) } },
      session,
    );
    return { doc, token };
  }

  /** The tenant and grant of a live token, or undefined for an unknown or revoked one (an expired one is found: the gateway names it). */
  async findActiveByHash(tokenHash: string): Promise<ActiveToken | undefined> {
    const doc = await this.tokens
      .findOne({ token_hash: tokenHash, revoked_at: null }, { _id: 1, tenant_id: 1, scopes: 1, environments: 1, expires_at: 1 })
      .lean();
    if (!doc) return undefined;
    return {
      tokenId: doc._id,
      tenantId: doc.tenant_id,
      scopes: scopesOf(doc),
      environments: doc.environments ?? null,
      expiresAt: doc.expires_at ? doc.expires_at.getTime() : null,
    };
  }

  /** The tenant's live tokens (not revoked; expired ones too, until revoked), oldest first. */
  async listForTenant(tenantId: string): Promise<ApiToken[]> {
    const docs = await this.tokens.find({ tenant_id: tenantId, revoked_at: null }).sort({ _id: 1 }).limit(10_000).lean();
    return docs.map(toApiToken);
  }

  /** One live token of the tenant, or undefined. */
  async findForTenant(tenantId: string, tokenId: string): Promise<ApiToken | undefined> {
    const doc = await this.tokens.findOne({ _id: tokenId, tenant_id: tenantId, revoked_at: null }).lean();
    return doc ? toApiToken(doc) : undefined;
  }

  /**
   * Revokes one live token of the tenant and records `token.revoked`, in one transaction;
   * undefined when the tenant has no such live token (another tenant's is not touched).
   */
  async revokeForTenant(tenantId: string, tokenId: string, cause: EventCause): Promise<{ revokedAt: Date; tokenHash: string } | undefined> {
    return inTransaction(this.connection, async (session) => {
      const revoked = await this.tokens
        .findOneAndUpdate({ _id: tokenId, tenant_id: tenantId, revoked_at: null }, { $set: { revoked_at: new Date() } }, { returnDocument: 'after', session })
        .lean();
      if (!revoked) return undefined;
      await this.outbox.record(
        tenantId,
        { type: 'token.revoked', environment: null, subject: { kind: 'token', id: revoked._id }, cause, data: { label: revoked.label } },
        session,
      );
      return { revokedAt: revoked.revoked_at!, tokenHash: revoked.token_hash };
    });
  }

  /** Moves each token's `last_used_at` forward to when a gateway last let it in (never back). */
  async recordUse(usedAt: ReadonlyMap<string, Date>): Promise<void> {
    if (usedAt.size === 0) return;
    await this.tokens.bulkWrite(
      [...usedAt].map(([tokenId, at]) => ({ updateOne: { filter: { _id: tokenId }, update: { $max: { last_used_at: at } } } })),
      { ordered: false },
    );
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

  /** Every tenant's tokens, for the operator's admin command. */
  async list(): Promise<Array<ApiTokenRecord & { tenant_name: string; grant: ApiToken }>> {
    const [tokens, tenants] = await Promise.all([
      this.tokens.find({}).sort({ _id: 1 }).lean(),
      this.tenants.find({}).lean(),
    ]);
    const names = new Map(tenants.map((tenant) => [tenant._id, tenant.name]));
    return tokens.map((doc) => ({ ...toRecord(doc), tenant_name: names.get(doc.tenant_id) ?? '?', grant: toApiToken(doc) }));
  }
}
