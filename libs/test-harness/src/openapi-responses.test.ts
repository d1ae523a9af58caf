import { describe, expect, it } from 'vitest';
import { OpenApiResponseChecker } from './openapi-responses.ts';

const checker = new OpenApiResponseChecker();
const environment = {
  id: 'env_01jc0000000000000000000000',
  name: 'prod',
  kind: 'production',
};

describe('OpenApiResponseChecker', () => {
  it('finds the operation of a concrete path, a literal segment before a parameter', () => {
    expect(checker.operationFor('POST', '/environments/prod/schedules/pause')?.template).toBe('/environments/{name}/schedules/pause');
    expect(checker.operationFor('GET', '/environments/prod/schedules/nightly/next?count=3')?.template).toBe('/environments/{name}/schedules/{schedule}/next');
    expect(checker.operationFor('GET', '/nowhere')).toBeUndefined();
  });

  it('accepts a declared refusal and refuses an undeclared status or code', () => {
    const notFound = JSON.stringify({ error: { code: 'not_found', message: 'Environment "x" was not found.', details: [] } });
    expect(checker.problems('GET', '/environments/x', 404, 'application/json', notFound)).toEqual([]);
    // GET /environments takes no name: it cannot answer 404.
    expect(checker.problems('GET', '/environments', 404, 'application/json', notFound)).toHaveLength(1);
    // A 409 on a route that declares only other 409 codes.
    const deleting = JSON.stringify({ error: { code: 'runs_running', message: 'm', details: [] } });
    expect(checker.problems('PATCH', '/environments/x', 409, 'application/json', deleting)[0]).toContain('does not match');
  });

  it('refuses a success body off its schema', () => {
    expect(checker.problems('GET', '/environments/prod', 200, 'application/json', JSON.stringify({ data: environment }))[0]).toContain('does not match');
    expect(checker.problems('GET', '/environments', 200, 'application/json', JSON.stringify({ data: [] }))).toEqual([]);
    expect(checker.problems('GET', '/environments', 200, 'application/json', JSON.stringify({ data: [], extra: 1 }))).toHaveLength(1);
    expect(checker.problems('GET', '/environments', 200, 'text/html', '<html>')).toHaveLength(1);
  });

  it('holds an answer outside the document to the error shape', () => {
    expect(checker.problems('GET', '/no-such-collection', 404, 'application/json', JSON.stringify({ error: { code: 'not_found', message: 'm', details: [] } }))).toEqual([]);
    expect(checker.problems('GET', '/no-such-collection', 404, 'application/json', JSON.stringify({ message: 'nope' }))).toHaveLength(1);
  });
});
