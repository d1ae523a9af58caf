import { z } from 'zod';
import { ResourceName } from './names.ts';

/** Largest secret value, in UTF-8 bytes. */
export const SECRET_VALUE_MAX_BYTES = 64 * 1024;

const utf8 = new TextEncoder();

/** The one way a secret value enters the API. Error messages never echo the value. */
export const SecretValue = z
  .string({ message: 'must be a string' })
  .refine((value) => utf8.encode(value).byteLength <= SECRET_VALUE_MAX_BYTES, {
    message: `must be at most ${SECRET_VALUE_MAX_BYTES} bytes (UTF-8)`,
  })
  // JSON Schema bounds characters, not bytes: the document gives the bound of an ASCII value
  // and says the rest (a quarter of it for 4-byte characters would refuse what the server takes).
  .meta({ maxLength: SECRET_VALUE_MAX_BYTES, description: `At most ${SECRET_VALUE_MAX_BYTES} bytes in UTF-8: that many ASCII characters, fewer of others.` });

export const PutSecretRequest = z.strictObject({ value: SecretValue });
export type PutSecretRequest = z.infer<typeof PutSecretRequest>;

export const SecretPathParams = z.object({ name: ResourceName, secret: ResourceName });
export type SecretPathParams = z.infer<typeof SecretPathParams>;

/** A secret as listed and as written: never its value. */
export const SecretRow = z.strictObject({
  name: ResourceName,
  /** The backend that holds the value, e.g. `local`. */
  backend: z.string(),
  /** Versions go 1..N; each write is the next one. */
  version: z.number().int().positive(),
  /** When the current version was written (for version 1, when the secret was created). */
  rotated_at: z.iso.datetime(),
  /** In a preview's listing, the parent it comes from when the preview does not set its own; null for its own. */
  inherited_from: ResourceName.nullable(),
});
export type SecretRow = z.infer<typeof SecretRow>;

/** Body of every DELETE of a named resource: `{data: {name}}`. */
export const DeletedResource = z.strictObject({ name: z.string() });
export type DeletedResource = z.infer<typeof DeletedResource>;
