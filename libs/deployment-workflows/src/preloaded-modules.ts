import { z } from 'zod';

// The bundle's `preloadModules` (libs/dev-stack's workflowBundleOptions): evaluated once
// per workflow thread, where every other module of the bundle is evaluated again for each
// workflow (the SDK keeps workflows' module state apart). The SDK then freezes what this
// reaches: zod's modules and its global config. The schemas themselves are still built
// per workflow, in workflow-inputs.ts.

// Without zod's JIT: a workflow parses its input once, where compiling a parser (`new
// Function`) costs more than it saves.
z.config({ jitless: true });
// zod sets its default locale and memoizer in its global config at the first schema it
// builds and the first error it formats; frozen, that config could take them no later.
z.strictObject({ a: z.array(z.string().max(1).nullable()), b: z.iso.datetime().optional() }).safeParse({ a: ['xx'], b: 1 });

/** The zod modules `workflow-inputs.ts` builds its schemas with (webpack names each function's own module). */
export const preloadedZod = [z.string, z.iso.datetime];
