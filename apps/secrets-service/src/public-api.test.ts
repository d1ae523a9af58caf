import { publicRoutesOf } from '@envengine/service-kit';
import { describe, expect, it } from 'vitest';
import { secretsPublicApi, type SecretsPublicApiDeps } from './public-api.ts';

describe('the secrets-service public API', () => {
  it('mounts exactly the PublicApi endpoints the gateway forwards to it', () => {
    // The handlers are only mounted, never called: no dependency is needed.
    const { mounted, declared } = publicRoutesOf('secrets', secretsPublicApi({} as SecretsPublicApiDeps));
    expect(mounted.length).toBeGreaterThan(0);
    expect(mounted).toEqual(declared);
  });
});
