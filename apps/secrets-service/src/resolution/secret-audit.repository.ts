import { Schema, type ClientSession, type Connection } from 'mongoose';
import { newId } from '@envengine/resource-ids';
import { InsertBatcher, TenantScopedModel } from '@envengine/tenant-data';

export interface AuditedSecretVersion {
  setting: string;
  secret: string;
  version: number;
}

/** Who read which secret versions, or which secret was retired, and when: never a value. */
interface SecretAuditDocument {
  _id: string;
  kind: 'resolve' | 'retire';
  at: Date;
  tenant_id: string;
  environment_id: string;
  /** resolve: the process that asked, as it named itself behind the resolver credential. */
  caller?: string;
  attempt_id?: string | null;
  binding?: string;
  secrets?: AuditedSecretVersion[];
  outcome?: 'resolved' | 'refused';
  reason?: string;
  /** retire: the secret and the last version it had. */
  secret?: string;
  secret_id?: string;
  last_version?: number;
  request_id?: string;
}

const auditSchema = new Schema<SecretAuditDocument>(
  {
    _id: { type: String, required: true },
    kind: { type: String, required: true },
    at: { type: Date, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
  },
  { versionKey: false, collection: 'secret_audit', strict: false },
);
auditSchema.index({ tenant_id: 1, environment_id: 1, at: -1 });
auditSchema.index({ tenant_id: 1, secret_id: 1 }, { sparse: true });

export class SecretAuditRepository {
  private readonly records: TenantScopedModel<SecretAuditDocument>;
  /** Resolutions are audited before they are answered; concurrent ones share a write. */
  private readonly resolutions: InsertBatcher<{ tenantId: string; doc: Omit<SecretAuditDocument, 'tenant_id'> }>;

  constructor(connection: Connection) {
    this.records = TenantScopedModel.of(connection, 'SecretAudit', auditSchema);
    this.resolutions = new InsertBatcher((docs) => this.records.insertManyOwned(docs));
  }

  ensureIndexes(): Promise<void> {
    return this.records.ensureIndexes();
  }

  async recordResolution(entry: {
    tenantId: string;
    environmentId: string;
    caller: string;
    attemptId: string | undefined;
    binding: string;
    secrets: AuditedSecretVersion[];
    outcome: 'resolved' | 'refused';
    reason?: string;
    requestId: string;
  }): Promise<void> {
    await this.resolutions.add({
      tenantId: entry.tenantId,
      doc: {
        _id: newId('aud'),
        kind: 'resolve',
        at: new Date(),
        environment_id: entry.environmentId,
        caller: entry.caller,
        attempt_id: entry.attemptId ?? null,
        binding: entry.binding,
        secrets: entry.secrets,
        outcome: entry.outcome,
        ...(entry.reason ? { reason: entry.reason } : {}),
        request_id: entry.requestId,
      },
    });
  }

  /** One record per retired secret, written in the transaction that retires it. */
  async recordRetirement(
    entry: {
      tenantId: string;
      environmentId: string;
      secret: string;
      secretId: string;
      lastVersion: number;
      requestId: string;
    },
    session: ClientSession,
  ): Promise<void> {
    await this.records.insert(
      entry.tenantId,
      {
        _id: newId('aud'),
        kind: 'retire',
        at: new Date(),
        environment_id: entry.environmentId,
        secret: entry.secret,
        secret_id: entry.secretId,
        last_version: entry.lastVersion,
        request_id: entry.requestId,
      },
      { session },
    );
  }

  /** Removes an environment's audit rows (its tear-down: nothing of it is kept; its attempts were canceled first, so no resolution follows); how many. */
  removeAll(tenantId: string, environmentId: string): Promise<number> {
    return this.records.deleteMany(tenantId, { environment_id: environmentId });
  }
}
