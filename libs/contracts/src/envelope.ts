import { z } from 'zod';

/** Every success body is `{"data": ...}` (docs/design.md#wire-conventions). */
export function dataEnvelope<T extends z.ZodType>(data: T) {
  return z.object({ data });
}
