import { z } from 'zod';
import { ResourceName } from './names.ts';

export const BindingMode = z.enum(['live', 'read_only']);
export type BindingMode = z.infer<typeof BindingMode>;

/** A setting name inside a binding's config or secret_refs. */
export const SettingName = z
  .string()
  .min(1, { message: 'must not be empty' })
  .max(255, { message: 'must be at most 255 characters' })
  // No body may use `__proto__` as a key (the services' JSON parser refuses it: a record would drop it).
  .meta({ not: { const: '__proto__' } });

const plainObject = (what: string) =>
  z.record(SettingName, z.unknown(), { message: `must be an object of ${what}` });

/** PUT replaces the whole binding: what is not sent takes its default. */
export const PutBindingRequest = z
  .strictObject({
    config: plainObject('connection settings').default({}),
    secret_refs: z
      .record(SettingName, ResourceName, { message: 'must be an object mapping a setting name to a secret name' })
      .default({}),
    mode: BindingMode.default('live'),
  })
  .superRefine((binding, ctx) => {
    // A setting is either plain config or a secret reference, never both: which one
    // would win at resolution would otherwise be a guess.
    for (const setting of Object.keys(binding.secret_refs)) {
      if (Object.hasOwn(binding.config, setting)) {
        ctx.addIssue({
          code: 'custom',
          path: ['secret_refs', setting],
          message: `is also a key of config; a setting is either config or a secret reference`,
        });
      }
    }
  });
export type PutBindingRequest = z.infer<typeof PutBindingRequest>;

export const BindingPathParams = z.object({ name: ResourceName, connection: ResourceName });
export type BindingPathParams = z.infer<typeof BindingPathParams>;

/** A binding as every response carries it: secret names, never secret values. */
export const Binding = z.strictObject({
  name: ResourceName,
  config: z.record(z.string(), z.unknown()),
  secret_refs: z.record(z.string(), z.string()),
  mode: BindingMode,
  /** Settings of secret_refs whose secret the environment no longer has. */
  dangling_secret_refs: z.array(z.string()),
  /** In a preview's listing, the parent it comes from when the preview does not set its own; null for its own. */
  inherited_from: ResourceName.nullable(),
  inserted_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
export type Binding = z.infer<typeof Binding>;

/**
 * Internal: what the attempt runner and remote workers send to get a binding's settings
 * with its secrets resolved. Never reachable through the gateway; the tenant travels in
 * the internal tenant header, as on every internal call.
 */
export const ResolveBindingRequest = z.strictObject({
  environment_id: z.string().regex(/^env_[0-9a-z]{26}$/, { message: 'must be an environment id' }),
  /** A preview's parent (placement names it from its own record): its bindings and secrets fill in what the preview does not set. */
  parent_environment_id: z.string().regex(/^env_[0-9a-z]{26}$/, { message: 'must be an environment id' }).optional(),
  binding: ResourceName,
  /** The attempt the values are for, recorded in the audit log. */
  attempt_id: z.string().max(64).optional(),
});
export type ResolveBindingRequest = z.infer<typeof ResolveBindingRequest>;

export const ResolvedSecretVersion = z.strictObject({ setting: z.string(), secret: z.string(), version: z.number().int().positive() });
export type ResolvedSecretVersion = z.infer<typeof ResolvedSecretVersion>;

export const ResolvedBinding = z.strictObject({
  name: ResourceName,
  mode: BindingMode,
  /** config with every secret_refs setting replaced by its secret's latest value. */
  config: z.record(z.string(), z.unknown()),
  secret_versions: z.array(ResolvedSecretVersion),
});
export type ResolvedBinding = z.infer<typeof ResolvedBinding>;

/** Internal: the modes of an environment's bindings, by environment id (what an attempt's plan needs; no settings, no secrets). */
export const BindingModes = z.array(z.strictObject({ name: ResourceName, mode: BindingMode }));
export type BindingModes = z.infer<typeof BindingModes>;

const EnvironmentIdParam = z.string().regex(/^env_[0-9a-z]{26}$/, { message: 'must be an environment id' });
export const BindingModesParams = z.object({ id: EnvironmentIdParam });
/** A preview's parent, whose bindings it inherits (placement, which owns environments, names it). */
export const BindingModesQuery = z.strictObject({ parent_id: EnvironmentIdParam.optional() });

/** Header naming the process that asks for resolved secrets, for the audit log. */
export const RESOLVER_CALLER_HEADER = 'x-envengine-caller';
/** The caller's name: 1-200 printable ASCII characters, the first not a space. */
export const RESOLVER_CALLER_PATTERN = /^[\x21-\x7e][\x20-\x7e]{0,199}$/;
