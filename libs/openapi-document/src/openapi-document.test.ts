import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { PublicApi } from '@envengine/contracts';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, openApiPath, serializedOpenApiDocument } from './openapi-document.ts';

const document = buildOpenApiDocument();

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('is a positive control for the validator: a broken document is refused', async () => {
    const broken = structuredClone(document) as Record<string, unknown>;
    (broken.paths as Record<string, unknown>)['/environments'] = { get: { responses: 'none' } };
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it('has schemas that are valid JSON Schema 2020-12 and whose references resolve', () => {
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    ajv.addSchema({ $id: 'doc', components: document.components } as object);
    const references = new Set<string>();
    JSON.stringify(document, (key, value: unknown) => {
      if (key === '$ref' && typeof value === 'string') references.add(value);
      return value;
    });
    expect(references.size).toBeGreaterThan(10);
    for (const reference of references) {
      expect(() => ajv.compile({ $ref: `doc${reference}` }), reference).not.toThrow();
    }
  });

  it('describes every PublicApi endpoint once, with its path parameters', () => {
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
    expect(operations.map(({ operation }) => operation.operationId).sort()).toEqual(Object.keys(PublicApi).sort());
    for (const [operationId, endpoint] of Object.entries(PublicApi)) {
      const found = operations.find((candidate) => candidate.operation.operationId === operationId)!;
      expect(`${found.method} ${found.path}`).toBe(`${endpoint.method} ${openApiPath(endpoint.path)}`);
      const inPath = [...found.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
      const declared = ((found.operation.parameters ?? []) as { name: string; in: string }[]).filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
      expect(declared.sort(), operationId).toEqual(inPath.sort());
    }
  });

  it('declares each refusal under the status the error code maps to', () => {
    const getEnvironment = document.paths['/environments/{name}']!.get!;
    expect(Object.keys(getEnvironment.responses).sort()).toEqual(['200', '401', '403', '404', '422', '429', '500', '503']);
    // A token's own refusals: its expiry beside 401 unauthorized, its scope as 403.
    expect(JSON.stringify(getEnvironment.responses['401'])).toContain('token_expired');
    expect(JSON.stringify(getEnvironment.responses['403'])).toContain('insufficient_scope');
    expect(getEnvironment.security).toEqual([{ apiToken: ['environments:read'] }]);
    expect(document.paths['/worker/heartbeat']!.post!.security).toEqual([{ poolToken: [] }]);
    const createRun = document.paths['/environments/{name}/runs']!.post!;
    const conflict = JSON.stringify(createRun.responses['409']);
    expect(conflict).toContain('environment_deleting');
    expect(conflict).toContain('idempotency_key_in_use');
  });

  it('is the committed docs/openapi.json (run `npm run build` and commit it when this fails)', () => {
    const committed = readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8');
    expect(committed === serializedOpenApiDocument()).toBe(true);
  });
});
