import { z } from 'zod';

export const HealthStatus = z.object({
  status: z.enum(['ok', 'unavailable']),
  service: z.string(),
  checks: z.record(z.string(), z.enum(['ok', 'down'])),
});
export type HealthStatus = z.infer<typeof HealthStatus>;
