import { describe, expect, it } from 'vitest';
import { CreateEnvironmentRequest, DeleteEnvironmentQuery, PatchEnvironmentRequest, ScheduleToggleRequest } from './environment.ts';
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
      purge_data_on_expiry: true,
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
    expect(detailsFromZodError(result.error!).map((detail) => detail.path)).toEqual(['name', 'executor']);
  });

  it('needs storage_prefix unless a preview names its parent, and a parent only on a preview', () => {
    const paths = (body: unknown) => {
      const result = CreateEnvironmentRequest.safeParse(body);
      return result.success ? [] : detailsFromZodError(result.error).map((detail) => detail.path);
    };
    expect(paths({ name: 'pr-1', executor: 'local', kind: 'preview' })).toEqual(['storage_prefix']);
    expect(paths({ name: 'pr-1', executor: 'local', kind: 'preview', parent: 'staging' })).toEqual([]);
    expect(paths({ name: 'pr-1', executor: 'local', parent: 'staging' })).toEqual(['parent']);
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

describe('environment lifecycle settings', () => {
  const base = { name: 'pr-1', storage_prefix: 'file:///lake/pr-1', executor: 'local' } as const;

  it('takes ttl_hours on a preview, fractions included, and refuses it on a persistent environment', () => {
    expect(CreateEnvironmentRequest.parse({ ...base, kind: 'preview', ttl_hours: 0.5 }).ttl_hours).toBe(0.5);
    const persistent = CreateEnvironmentRequest.safeParse({ ...base, ttl_hours: 2 });
    expect(persistent.success).toBe(false);
    expect(persistent.error?.issues[0]?.path).toEqual(['ttl_hours']);
  });

  it.each([0, -1, '2', 8761, Number.NaN])('refuses ttl_hours %s', (ttl) => {
    expect(CreateEnvironmentRequest.safeParse({ ...base, kind: 'preview', ttl_hours: ttl }).success).toBe(false);
    expect(PatchEnvironmentRequest.safeParse({ ttl_hours: ttl }).success).toBe(false);
  });

  it.each([0, -2, 1.5, '2'])('refuses max_concurrent_runs %s', (limit) => {
    expect(CreateEnvironmentRequest.safeParse({ ...base, max_concurrent_runs: limit }).success).toBe(false);
    expect(PatchEnvironmentRequest.safeParse({ max_concurrent_runs: limit }).success).toBe(false);
  });

  it('PATCH takes null to remove a TTL or a limit, and refuses server-owned fields', () => {
    expect(PatchEnvironmentRequest.parse({ ttl_hours: null, max_concurrent_runs: null })).toEqual({ ttl_hours: null, max_concurrent_runs: null });
    for (const field of ['id', 'name', 'kind', 'active_deployment_id', 'schedules_paused', 'status', 'expires_at']) {
      expect(PatchEnvironmentRequest.safeParse({ [field]: 'x' }).success, field).toBe(false);
    }
  });

  it('DELETE takes force and purge_data as true or false only', () => {
    expect(DeleteEnvironmentQuery.parse({})).toEqual({ force: false, purge_data: false });
    expect(DeleteEnvironmentQuery.parse({ force: 'true', purge_data: 'false' })).toEqual({ force: true, purge_data: false });
    expect(DeleteEnvironmentQuery.safeParse({ force: 'yes' }).success).toBe(false);
    expect(DeleteEnvironmentQuery.safeParse({ purge: 'true' }).success).toBe(false);
  });
});

describe('httpStatusFor', () => {
  it('maps every error code to the status of docs/design.md#wire-conventions', () => {
    const expected: Record<ErrorCode, number> = {
      unauthorized: 401,
      token_expired: 401,
      insufficient_scope: 403,
      invalid_json: 400,
      invalid_request: 422,
      not_found: 404,
      method_not_allowed: 405,
      environment_expired: 404,
      activation_in_progress: 409,
      environment_exists: 409,
      environment_has_previews: 409,
      storage_prefix_taken: 409,
      environment_deleting: 409,
      runs_running: 409,
      deployment_not_ready: 409,
      unknown_secret: 422,
      idempotency_key_reused: 422,
      idempotency_key_in_use: 409,
      no_active_deployment: 409,
      run_finished: 409,
      lease_superseded: 409,
      materialization_unreachable: 409,
      range_not_satisfiable: 416,
      payload_too_large: 413,
      rate_limited: 429,
      queued_runs_quota_exceeded: 429,
      queued_runs_per_environment_quota_exceeded: 429,
      environments_quota_exceeded: 429,
      previews_quota_exceeded: 429,
      bundle_bytes_quota_exceeded: 429,
      materialization_bytes_quota_exceeded: 429,
      secrets_per_environment_quota_exceeded: 429,
      webhooks_quota_exceeded: 429,
      pool_credentials_quota_exceeded: 429,
      tokens_quota_exceeded: 429,
      webhook_target_refused: 422,
      unavailable: 503,
      internal_error: 500,
    };
    for (const code of ErrorCode.options) expect(httpStatusFor(code), code).toBe(expected[code]);
  });
});
