import { Schema } from 'mongoose';

/**
 * The listing row of one secret of one environment. `_id` is the secret's address
 * (`<tenant>/<environment>/<name>`), so the hot paths read it by primary key;
 * `secret_id` names this incarnation of it, under which the backend keeps its versions
 * (a secret deleted and written again starts over under a new one).
 */
export interface SecretRowDocument {
  _id: string;
  secret_id: string;
  tenant_id: string;
  environment_id: string;
  name: string;
  backend: string;
  created_at: Date;
  /** Set when a DELETE began; such a row is gone for every reader and a retry finishes it. */
  retiring_at: Date | null;
}

export const secretRowSchema = new Schema<SecretRowDocument>(
  {
    _id: { type: String, required: true },
    secret_id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    name: { type: String, required: true },
    backend: { type: String, required: true },
    created_at: { type: Date, required: true },
    retiring_at: { type: Date, default: null },
  },
  { versionKey: false, collection: 'secrets' },
);

secretRowSchema.index({ tenant_id: 1, environment_id: 1, name: 1 });

/** The `_id` of a secret row: tenant, environment and name cannot contain `/`. */
export function secretKey(tenantId: string, environmentId: string, name: string): string {
  return `${tenantId}/${environmentId}/${name}`;
}
