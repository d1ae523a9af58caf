import { z } from 'zod';

// A leaf module: workflow code imports it (through workflow-inputs.ts) without the rest of the events' schemas.

/**
 * Who caused an event: an API token (`tok_…`), a schedule's tick, the engine itself (the
 * reaper, a tear-down, a workflow), a pool's worker (`worker:<pool>`), or an operator (the
 * admin command: the API token store has no API of its own).
 */
export const EventActor = z
  .string()
  .regex(/^(tok_[0-9a-z]{1,64}|schedule|engine|operator|worker:[^\s]{1,200})$/)
  .describe('`tok_…` (an API token), `schedule`, `engine`, `operator` (the admin command) or `worker:<pool>`.');
export type EventActor = z.infer<typeof EventActor>;
