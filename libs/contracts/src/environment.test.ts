import { describe, expect, it } from 'vitest';
import { CreateEnvironmentRequest, PatchEnvironmentRequest, ScheduleToggleRequest } from './environment.ts';
import { detailsFromZodError, httpStatusFor, ErrorCode } from './errors.ts';
import { ResourceName } from './names.ts';

describe('ResourceName', () => {
  it.each(['prod', 'a', 'A1', 'pr-42.preview_x', 'a..b', 'x'.repeat(63), '0day'])('accepts %s', (name) => {
    expect(ResourceName.safeParse(name).success).toBe(true);
  });

  it.each(['', 'a/b', 'a b', '..', '.hidden', '-dash', '_under', 'x'.repeat(64), 'é', 'a\nb'])('rejects %j', (name) => {
    expect(ResourceName.safeParse(name).success).toBe(false);
  });
});

describe('CreateEnvironmentRequest', () => {
  it('applies the defaults', () => {
    expect(CreateEnvironmentRequest.parse({ name: 'prod', storage_prefix: 's3://x', executor: 'local' })).toEqual({
      name: 'prod',
      storage_prefix: 's3://x',
      executor: 'local',
      kind: 'persistent',
      strict: false,
      egress: 'none',
    });
  });

  it('names each unknown field in the details', () => {
    const result = CreateEnvironmentRequest.safeParse({ name: 'prod', storage_prefix: 'x', executor: 'local', id: 'e', git_ref: 'g' });
    expect(result.success).toBe(false);
    expect(detailsFromZodError(result.error!)).toEqual([
      { path: 'id', message: 'is not a known field' },
      { path: 'git_ref', message: 'is not a known field' },
    ]);
  });

  it('reports every missing field', () => {
    const result = CreateEnvironmentRequest.safeParse({});
    expect(detailsFromZodError(result.error!).map((detail) => detail.path)).toEqual(['name', 'storage_prefix', 'executor']);
  });

  it('refuses white space in the storage prefix', () => {
    expect(CreateEnvironmentRequest.safeParse({ name: 'p', storage_prefix: 's3://a b', executor: 'local' }).success).toBe(false);
  });
});

describe('PatchEnvironmentRequest', () => {
  it('takes egress and strict, alone or together', () => {
    expect(PatchEnvironmentRequest.parse({ egress: 'public' })).toEqual({ egress: 'public' });
    expect(PatchEnvironmentRequest.parse({ egress: 'none', strict: true })).toEqual({ egress: 'none', strict: true });
  });

  it.each([{}, { egress: 'everything' }, { name: 'x' }, { id: 'env_x', egress: 'none' }, { kind: 'preview' }, { schedules_paused: true }, { strict: 'yes' }])('refuses %j', (body) => {
    expect(PatchEnvironmentRequest.safeParse(body).success).toBe(false);
  });
});

describe('ScheduleToggleRequest', () => {
  it('takes an empty body or a reason only', () => {
    expect(ScheduleToggleRequest.parse({})).toEqual({});
    expect(ScheduleToggleRequest.parse({ reason: 'r' })).toEqual({ reason: 'r' });
    expect(ScheduleToggleRequest.parse({ reason: null })).toEqual({ reason: null });
    expect(ScheduleToggleRequest.safeParse({ reason: 1 }).success).toBe(false);
    expect(ScheduleToggleRequest.safeParse({ paused: true }).success).toBe(false);
  });
});

describe('httpStatusFor', () => {
  it('maps every error code to the status of DESIGN.md §4', () => {
    const expected: Record<ErrorCode, number> = {
      unauthorized: 401,
      invalid_json: 400,
      invalid_request: 422,
      not_found: 404,
      activation_in_progress: 409,
      environment_exists: 409,
      deployment_not_ready: 409,
      unknown_secret: 422,
      idempotency_key_reused: 422,
      idempotency_key_in_use: 409,
      no_active_deployment: 409,
      run_finished: 409,
      lease_superseded: 409,
      payload_too_large: 413,
      rate_limited: 429,
      unavailable: 503,
      internal_error: 500,
    };
    for (const code of ErrorCode.options) expect(httpStatusFor(code), code).toBe(expected[code]);
  });
});
