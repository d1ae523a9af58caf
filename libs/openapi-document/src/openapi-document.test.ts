import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { EVENT_TYPES, PublicApi } from '@envengine/contracts';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, openApiPath, serializedManifestSchema, serializedOpenApiDocument } from './openapi-document.ts';

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

  it('has shared components for generated clients: one Error, each event, the run body\'s forms (issue 61)', () => {
    const schemas = (document.components as { schemas: Record<string, Record<string, unknown>> }).schemas;
    // Every refusal is the one Error component, its codes named beside it.
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (Number(status) < 400 || !response.content) continue;
          expect(JSON.stringify(response.content), `${method} ${path} ${status}`).toContain('"#/components/schemas/Error"');
          expect(JSON.stringify(response.content), `${method} ${path} ${status}`).not.toContain('allOf');
          expect(response['x-error-codes'], `${method} ${path} ${status}`).toBeInstanceOf(Array);
        }
      }
    }
    expect(schemas.Event!.oneOf).toHaveLength(EVENT_TYPES.length);
    expect(schemas.RunQueuedEvent!.properties).toMatchObject({ subject: { $ref: '#/components/schemas/EventSubject' } });
    expect(schemas.CreateRunRequest).toEqual({ oneOf: [{ $ref: '#/components/schemas/CreateRunForJob' }, { $ref: '#/components/schemas/CreateRunForAssets' }] });
    // Defaulted fields are optional in a request, with no `default` keyword (which openapi-typescript makes required).
    expect(schemas.CreateEnvironmentRequest!.required).toEqual(['name', 'executor']);
    expect(schemas.CreateRunForJob!.required).toEqual(['job']);
    for (const id of Object.keys(schemas).filter((name) => name.endsWith('Request') || name.startsWith('CreateRunFor'))) {
      expect(JSON.stringify(schemas[id]), id).not.toContain('"default":');
    }
    // A bundle's upload: raw bytes under either media type.
    const upload = document.paths['/bundles']!.post!.requestBody as { content: Record<string, { schema: unknown }> };
    expect(Object.keys(upload.content).sort()).toEqual(['application/gzip', 'application/octet-stream']);
    expect(upload.content['application/octet-stream']!.schema).toMatchObject({ type: 'string', format: 'binary' });
  });

  it('is the committed docs/manifest.schema.json, and the ingest body names it (run `npm run build` and commit it when this fails)', () => {
    const committed = readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'docs', 'manifest.schema.json'), 'utf8');
    expect(committed === serializedManifestSchema()).toBe(true);
    const schema = JSON.parse(committed) as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(schema.properties)).toEqual(['version', 'assets', 'jobs', 'schedules']);
    expect(schema.required).toEqual(['version', 'assets']);
    const document = buildOpenApiDocument() as unknown as { components: { schemas: Record<string, { properties?: Record<string, { $ref?: string }> }> } };
    expect(document.components.schemas.CreateDeploymentRequest!.properties!.manifest!.$ref).toBe('#/components/schemas/Manifest');
    // An editor checking a manifest.json with it: the example passes, a wrong column type does not.
    const validate = new Ajv2020({ strict: false }).compile(schema);
    const example = JSON.parse(readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'examples', 'orders', 'manifest.json'), 'utf8')) as { assets: Array<{ schema?: { columns: Array<{ type: string }> } }> };
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
    example.assets[0]!.schema!.columns[0]!.type = 'strng';
    expect(validate(example)).toBe(false);
  });

  it('is the committed docs/openapi.json (run `npm run build` and commit it when this fails)', () => {
    const committed = readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8');
    expect(committed === serializedOpenApiDocument()).toBe(true);
  });
});
