import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '@envengine/resource-ids';
import { ensureCollectionAndIndexes, isDuplicateKeyError } from '@envengine/service-kit';
import { generateToken, hashToken } from './token-codec.ts';

/** Revocations are broadcast on this Redis channel so gateways drop cached tokens at once. */
export const TOKEN_REVOKED_CHANNEL = 'envengine:api-tokens:revoked';

/** Each token's rate-limit buckets, shared by the gateways: the only Redis keys a gateway may touch. */
export const RATE_LIMIT_KEY_PREFIX = 'envengine:rate:';

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

/** Tenants and their API tokens, kept in the gateway's database. */
export class ApiTokenRepository {
  private readonly tenants: Model<TenantDocument>;
  private readonly tokens: Model<ApiTokenDocument>;

  constructor(connection: Connection) {
    this.tenants = connection.models.Tenant ?? connection.model<TenantDocument>('Tenant', tenantSchema);
    this.tokens = connection.models.ApiToken ?? connection.model<ApiTokenDocument>('ApiToken', apiTokenSchema);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.tenants);
    await ensureCollectionAndIndexes(this.tokens);
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

  async issueToken(tenantId: string, label: string): Promise<IssuedToken> {
    const token = generateToken();
    const doc = await this.tokens.create({
      _id: newId('tok'),
      tenant_id: tenantId,
      label,
      token_hash: hashToken(token),
      created_at: new Date(),
      revoked_at: null,
    });
    return { ...toRecord(doc.toObject()), token };
  }

  /** The tenant a live token belongs to, or undefined for an unknown or revoked token. */
  async findActiveByHash(tokenHash: string): Promise<{ tokenId: string; tenantId: string } | undefined> {
    const doc = await this.tokens.findOne({ token_hash: tokenHash, revoked_at: null }, { _id: 1, tenant_id: 1 }).lean();
    return doc ? { tokenId: doc._id, tenantId: doc.tenant_id } : undefined;
  }

  /** Marks the token revoked; returns its hash so callers can broadcast the revocation. */
  async revoke(tokenId: string): Promise<{ record: ApiTokenRecord; tokenHash: string } | undefined> {
    const doc = await this.tokens
      .findOneAndUpdate({ _id: tokenId }, { $set: { revoked_at: new Date() } }, { returnDocument: 'after' })
      .lean();
    return doc ? { record: toRecord(doc), tokenHash: doc.token_hash } : undefined;
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
