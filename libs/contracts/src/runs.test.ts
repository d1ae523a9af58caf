import { describe, expect, it } from 'vitest';
import { CreateRunRequest, RunListQuery } from './runs.ts';

describe('CreateRunRequest', () => {
  it('takes a job or assets, with max_attempts 1..10 defaulting to 1', () => {
    expect(CreateRunRequest.parse({ job: 'refresh' })).toEqual({ job: 'refresh', max_attempts: 1 });
    expect(CreateRunRequest.parse({ assets: ['a', 'b'], max_attempts: 10 })).toEqual({ assets: ['a', 'b'], max_attempts: 10 });
  });

  it.each([
    ['both', { job: 'j', assets: ['a'] }],
    ['neither', {}],
    ['max_attempts 0', { job: 'j', max_attempts: 0 }],
    ['max_attempts 11', { job: 'j', max_attempts: 11 }],
    ['max_attempts 1.5', { job: 'j', max_attempts: 1.5 }],
    ['an empty asset list', { assets: [] }],
    ['an unknown field', { job: 'j', priority: 1 }],
  ])('refuses %s', (_what, body) => {
    expect(CreateRunRequest.safeParse(body).success).toBe(false);
  });
});

describe('RunListQuery', () => {
  it('reads paging from the query string', () => {
    expect(RunListQuery.parse({ limit: '5', status: 'failed' })).toEqual({ limit: 5, status: 'failed' });
    expect(RunListQuery.safeParse({ status: 'done' }).success).toBe(false);
  });
});
