import { internalRoutesOf } from '@envengine/service-kit';
import { describe, expect, it } from 'vitest';
import { placementInternalApi, type PlacementInternalApiDeps } from './internal-api.ts';

describe('the placement-service internal API', () => {
  it('mounts exactly the InternalApi routes it serves, each behind the credential the table names', () => {
    // The handlers are only mounted, never called: no dependency is needed.
    const { mounted, declared } = internalRoutesOf('placement', ...placementInternalApi({} as PlacementInternalApiDeps));
    expect(mounted.length).toBeGreaterThan(0);
    expect(mounted).toEqual(declared);
  });
});
