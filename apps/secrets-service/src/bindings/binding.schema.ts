import { Schema } from 'mongoose';
import type { BindingMode } from '@envengine/contracts';

/**
 * A binding as stored. `config` is kept as JSON text because its keys are the user's
 * (they may hold `.` or start with `$`, which stored field names cannot); `secret_refs`
 * as pairs, so that the bindings naming a secret can be found by index.
 */
export interface BindingDocument {
  _id: string;
  tenant_id: string;
  environment_id: string;
  name: string;
  config_json: string;
  secret_refs: Array<{ setting: string; secret: string }>;
  mode: BindingMode;
  /** Random per write; `first_revision` tells a create from a replace. */
  revision: string;
  first_revision: string;
  inserted_at: Date;
  updated_at: Date;
}

export const bindingSchema = new Schema<BindingDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    name: { type: String, required: true },
    config_json: { type: String, required: true },
    secret_refs: [{ _id: false, setting: { type: String, required: true }, secret: { type: String, required: true } }],
    mode: { type: String, required: true, enum: ['live', 'read_only'] },
    revision: { type: String, required: true },
    first_revision: { type: String, required: true },
    inserted_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'bindings' },
);

// One binding per name and environment; resolution and every route look it up by this key.
bindingSchema.index({ tenant_id: 1, environment_id: 1, name: 1 }, { unique: true });
