import { Schema } from 'mongoose';

/**
 * The listing row of one secret of one environment; its value lives in the backend named
 * here, under this row's `_id`. `version` is 0 until the first write is published.
 */
export interface SecretRowDocument {
  _id: string;
  tenant_id: string;
  environment_id: string;
  name: string;
  backend: string;
  version: number;
  created_at: Date;
  rotated_at: Date | null;
  /** Set when a DELETE began; such a row is gone for every reader and a retry finishes it. */
  retiring_at: Date | null;
}

export const secretRowSchema = new Schema<SecretRowDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    name: { type: String, required: true },
    backend: { type: String, required: true },
    version: { type: Number, required: true },
    created_at: { type: Date, required: true },
    rotated_at: { type: Date, default: null },
    retiring_at: { type: Date, default: null },
  },
  { versionKey: false, collection: 'secrets' },
);

secretRowSchema.index({ tenant_id: 1, environment_id: 1, name: 1 }, { unique: true });
