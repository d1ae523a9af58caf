import { internalRoutesOf } from '@envengine/service-kit';
import { describe, expect, it } from 'vitest';
import { secretsInternalApi, type SecretsInternalApiDeps } from './internal-api.ts';

describe('the secrets-service internal API', () => {
  it('mounts exactly the InternalApi routes it serves, each behind the credential the table names', () => {
    // The handlers are only mounted, never called: no dependency is needed.
    const { mounted, declared } = internalRoutesOf('secrets', ...secretsInternalApi({} as SecretsInternalApiDeps));
    expect(mounted.length).toBeGreaterThan(0);
    expect(mounted).toEqual(declared);
  });
});
