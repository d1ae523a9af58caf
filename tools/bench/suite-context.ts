import type { RunningStack } from '@envengine/dev-stack';

/** What every suite gets: the running stack and one tenant's token. */
export interface SuiteContext {
  stack: RunningStack;
  tenantId: string;
  auth: { authorization: string };
}
