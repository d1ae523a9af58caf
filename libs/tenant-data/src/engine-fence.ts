import { Schema, type ClientSession, type Connection } from 'mongoose';
import { ENGINE_OWNER, TenantScopedModel } from './tenant-scoped-model.ts';

interface EngineFenceDocument {
  _id: string;
  tenant_id: string;
  writes: number;
}

const engineFenceSchema = new Schema<EngineFenceDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    writes: { type: Number, required: true, default: 0 },
  },
  { versionKey: false, collection: 'engine_fences' },
);

/**
 * One engine-wide document that transactions of one kind write first, so that two of them
 * conflict and one runs again with the other's writes in view: MongoDB has no predicate
 * locks, and a check across tenants (slots held, directories taken) would otherwise pass
 * a racing write unseen.
 */
export class EngineFence {
  private readonly fences: TenantScopedModel<EngineFenceDocument>;

  constructor(
    connection: Connection,
    private readonly id: string,
  ) {
    this.fences = TenantScopedModel.of(connection, 'EngineFence', engineFenceSchema);
  }

  /** Makes the document once, at start-up, so that transactions only ever update it. */
  async ensure(): Promise<void> {
    await this.fences.ensureIndexes();
    await this.fences.updateOne(ENGINE_OWNER, { _id: this.id }, { $setOnInsert: { writes: 0 } }, { upsert: true });
  }

  /** Writes it in the caller's transaction. */
  async write(session: ClientSession): Promise<void> {
    await this.fences.updateOne(ENGINE_OWNER, { _id: this.id }, { $inc: { writes: 1 } }, { session });
  }
}
