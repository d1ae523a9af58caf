import { describe, expect, it } from 'vitest';
import { EnvironmentAccess, type Scope } from '@envengine/contracts';
import { operationOf } from '../proxy/public-routes.ts';
import { authorizeOperation } from './operation-access.ts';
import type { Caller } from './token-authenticator.ts';

const caller = (scopes: Scope[], environments: string[] | null = null): Caller => ({
  tenantId: 'ten_1',
  tokenId: 'tok_1',
  scopes: new Set(scopes),
  environments: new EnvironmentAccess(environments),
  expiresAt: null,
});

const refusal = (who: Caller, method: string, path: string) => {
  try {
    authorizeOperation(who, operationOf(method, path)!);
    return undefined;
  } catch (error) {
    const { code, message } = error as { code: string; message: string };
    return { code, message };
  }
};

describe('authorizeOperation', () => {
  it('lets a token with the operation\'s scope through, and names the scope it lacks', () => {
    expect(refusal(caller(['runs:write']), 'POST', '/environments/prod/runs')).toBeUndefined();
    expect(refusal(caller(['runs:read']), 'POST', '/environments/prod/runs')).toEqual({
      code: 'insufficient_scope',
      message: 'createRun needs the scope "runs:write", which this token does not have.',
    });
    // HEAD is the GET's scope.
    expect(refusal(caller(['runs:read']), 'HEAD', '/runs/run_1')).toBeUndefined();
  });

  it('finds no environment by name outside a restriction, with the 404 of a name that does not exist', () => {
    const ci = caller(['environments:read', 'runs:read', 'pool:admin'], ['pr-*']);
    expect(refusal(ci, 'GET', '/environments/pr-7/runs')).toBeUndefined();
    expect(refusal(ci, 'GET', '/environments/prod/runs')).toEqual({ code: 'not_found', message: 'Environment "prod" was not found.' });
    // A run by id is the placement-service's to check (it knows the run's environment).
    expect(refusal(ci, 'GET', '/runs/run_1')).toBeUndefined();
    expect(refusal(ci, 'GET', '/pool')?.code).toBe('insufficient_scope');
    expect(refusal(caller(['runs:read']), 'GET', '/pool')).toBeUndefined();
  });

  it('asks nothing of a worker API call (a pool token opens it)', () => {
    expect(refusal(caller([]), 'POST', '/worker/heartbeat')).toBeUndefined();
  });
});
