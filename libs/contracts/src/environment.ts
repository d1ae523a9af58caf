import { z } from 'zod';
import { dataEnvelope } from './envelope.ts';
import { ResourceName } from './names.ts';

export const Executor = z.enum(['local', 'remote']);
export type Executor = z.infer<typeof Executor>;

export const EnvironmentKind = z.enum(['persistent', 'preview']);
export type EnvironmentKind = z.infer<typeof EnvironmentKind>;

/**
 * What the environment's assets may reach on the network (DESIGN.md §6): `none` (the
 * default) nothing; `public` other hosts through a user-mode network, never the engine
 * host, private ranges or link-local addresses.
 */
export const Egress = z.enum(['none', 'public']);
export type Egress = z.infer<typeof Egress>;

/** The environment object, as every response carries it: all fields always present. */
export const Environment = z.object({
  id: z.string(),
  name: ResourceName,
  kind: EnvironmentKind,
  git_ref: z.string().nullable(),
  storage_prefix: z.string(),
  strict: z.boolean(),
  schedules_paused: z.boolean(),
  schedules_paused_reason: z.string().nullable(),
  executor: Executor,
  egress: Egress,
  active_deployment_id: z.string().nullable(),
  inserted_at: z.iso.datetime(),
});
export type Environment = z.infer<typeof Environment>;

export const StoragePrefix = z
  .string()
  .min(1, { message: 'must not be empty' })
  .max(1024, { message: 'must be at most 1024 characters' })
  .refine((prefix) => !/\s/.test(prefix), { message: 'must not contain white space' });

/** Unknown fields are rejected so that server-owned fields cannot be set (mass assignment). */
export const CreateEnvironmentRequest = z.strictObject({
  name: ResourceName,
  storage_prefix: StoragePrefix,
  executor: Executor,
  kind: EnvironmentKind.default('persistent'),
  strict: z.boolean().default(false),
  egress: Egress.default('none'),
});
export type CreateEnvironmentRequest = z.infer<typeof CreateEnvironmentRequest>;

/**
 * `PATCH /api/v1/environments/:name`: the settings that may change after create. Unknown
 * fields, and server-owned ones (`id`, `name`, `kind`, ...), are refused.
 */
export const PatchEnvironmentRequest = z
  .strictObject({ egress: Egress.optional(), strict: z.boolean().optional() })
  .refine((patch) => Object.keys(patch).length > 0, { message: 'names at least one setting to change (egress, strict)' });
export type PatchEnvironmentRequest = z.infer<typeof PatchEnvironmentRequest>;

export const EnvironmentPathParams = z.object({ name: ResourceName });
export type EnvironmentPathParams = z.infer<typeof EnvironmentPathParams>;

export const SetPlacementRequest = z.strictObject({ executor: Executor });
export type SetPlacementRequest = z.infer<typeof SetPlacementRequest>;

/** Body of schedules pause and resume; both are optional (DESIGN.md §5). */
export const ScheduleToggleRequest = z.strictObject({
  reason: z.string().max(500, { message: 'must be at most 500 characters' }).nullable().optional(),
});
export type ScheduleToggleRequest = z.infer<typeof ScheduleToggleRequest>;

export const PlacementResult = z.object({
  executor: Executor,
  environments: z.array(Environment),
});
export type PlacementResult = z.infer<typeof PlacementResult>;

export const EnvironmentResponse = dataEnvelope(Environment);
export const EnvironmentListResponse = dataEnvelope(z.array(Environment));
export const PlacementResponse = dataEnvelope(PlacementResult);
