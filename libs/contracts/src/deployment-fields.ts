import { z } from 'zod';

// Fields of a deployment that a workflow's input carries: a leaf module, so that workflow code
// (through workflow-inputs.ts) evaluates these and not the manifest's schemas.

export const GitInfo = z.strictObject({
  branch: z.string().min(1, { message: 'must not be empty' }).max(255),
  sha: z.string().min(1, { message: 'must not be empty' }).max(255),
});
export type GitInfo = z.infer<typeof GitInfo>;

export const ValidationItem = z.object({ code: z.string(), path: z.string(), message: z.string() });
export type ValidationItem = z.infer<typeof ValidationItem>;
