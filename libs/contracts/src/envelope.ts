import { z } from 'zod';

/** Every success body is `{"data": ...}` (DESIGN.md §4). */
export function dataEnvelope<T extends z.ZodType>(data: T) {
  return z.object({ data });
}
