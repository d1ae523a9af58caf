import { Schema } from 'mongoose';

/**
 * The row of one secret of one environment: which backend holds its values and which
 * version is current. `_id` is the secret's id; a secret deleted and written again is a
 * new row with a new id, so its old versions can never be mistaken for the new ones.
 */
export interface SecretRowDocument {
  _id: string;
  tenant_id: string;
  environment_id: string;
  name: string;
  backend: string;
  /** The current version; versions are numbered 1..N with no gaps. */
  version: number;
  /** When the current version was written. */
  rotated_at: Date;
  created_at: Date;
}

export const secretRowSchema = new Schema<SecretRowDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    name: { type: String, required: true },
    backend: { type: String, required: true },
    version: { type: Number, required: true, min: 1 },
    rotated_at: { type: Date, required: true },
    created_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'secrets' },
);

// One row per name and environment: the key that lookups by name use, and what keeps two
// first writes of one name from making two secrets.
secretRowSchema.index({ tenant_id: 1, environment_id: 1, name: 1 }, { unique: true });
