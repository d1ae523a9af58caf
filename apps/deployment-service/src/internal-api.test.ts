import { internalRoutesOf } from '@envengine/service-kit';
import { describe, expect, it } from 'vitest';
import { deploymentInternalApi, type DeploymentInternalApiDeps } from './internal-api.ts';

describe('the deployment-service internal API', () => {
  it('mounts exactly the InternalApi routes it serves, each behind the credential the table names', () => {
    // The handlers are only mounted, never called: no dependency is needed.
    const { mounted, declared } = internalRoutesOf('deployment', ...deploymentInternalApi({} as DeploymentInternalApiDeps));
    expect(mounted.length).toBeGreaterThan(0);
    expect(mounted).toEqual(declared);
  });
});
