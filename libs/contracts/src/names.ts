import { z } from 'zod';

/** Names used in paths: environments, connections, secrets (docs/design.md#wire-conventions). */
export const RESOURCE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export const ResourceName = z
  .string()
  .regex(RESOURCE_NAME_PATTERN, {
    message:
      'must be 1-63 characters of letters, digits, ".", "_" or "-", starting with a letter or digit',
  });
export type ResourceName = z.infer<typeof ResourceName>;
