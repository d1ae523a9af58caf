import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { buildOpenApiDocument, type OpenApiDocument } from '@envengine/openapi-document';

// ajv-formats is CommonJS: its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

const COMPONENTS_ID = 'envengine-openapi-components';

interface Operation {
  operationId: string;
  method: string;
  template: string;
  pattern: RegExp;
  /** Literal segments count: a literal match wins over a parameter. */
  specificity: number;
  responses: Record<string, { 'x-error-codes'?: string[]; content?: Record<string, { schema: unknown }> }>;
}

/** `#/components/schemas/X` → a reference into the components registered with ajv. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        key,
        key === '$ref' && typeof inner === 'string' ? inner.replace('#/components/schemas/', `${COMPONENTS_ID}#/$defs/`) : rewriteRefs(inner),
      ]),
    );
  }
  return value;
}

/**
 * Checks every answer of the public API against the OpenAPI document generated from the
 * contracts: its status must be one the operation declares and its body must match that
 * status's schema (error bodies included). Answers to paths outside the document (a
 * probe of a route that does not exist) must still be the API's error shape.
 */
export class OpenApiResponseChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly errorBody: ValidateFunction;

  constructor(readonly document: OpenApiDocument = buildOpenApiDocument()) {
    addFormats(this.ajv);
    const components = (document.components as { schemas: Record<string, unknown> }).schemas;
    this.ajv.addSchema({ $id: COMPONENTS_ID, $defs: rewriteRefs(components) as Record<string, unknown> });
    this.errorBody = this.ajv.compile({ $ref: `${COMPONENTS_ID}#/$defs/Error` });
    for (const [template, methods] of Object.entries(document.paths)) {
      const segments = template.split('/').filter(Boolean);
      const pattern = new RegExp(`^/${segments.map((segment) => (segment.startsWith('{') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}$`);
      for (const [method, operation] of Object.entries(methods)) {
        this.operations.push({
          operationId: operation.operationId,
          method: method.toUpperCase(),
          template,
          pattern,
          specificity: segments.filter((segment) => !segment.startsWith('{')).length,
          responses: operation.responses as Operation['responses'],
        });
      }
    }
  }

  /** The operation that a method and path (relative to `/api/v1`) call, if the document has one. */
  operationFor(method: string, path: string): Operation | undefined {
    const bare = path.split('?', 1)[0]!;
    return this.operations
      .filter((operation) => operation.method === method.toUpperCase() && operation.pattern.test(bare))
      .sort((a, b) => b.specificity - a.specificity)[0];
  }

  private recordCoverage(operationId: string, status: number): void {
    const dir = process.env[OPENAPI_COVERAGE_DIR_VARIABLE];
    if (dir) appendFileSync(join(dir, `${process.pid}.txt`), `${operationId} ${status}\n`);
  }

  /** The problems of one answer (empty when it conforms). */
  problems(method: string, path: string, status: number, contentType: string | null, text: string): string[] {
    const operation = this.operationFor(method, path);
    const where = `${method} ${path} → ${status}`;
    let body: unknown;
    let isJson = false;
    if (text.length > 0 && (contentType ?? '').includes('json')) {
      try {
        body = JSON.parse(text);
        isJson = true;
      } catch {
        return [`${where}: the body is not JSON though its Content-Type says so`];
      }
    }
    if (!operation) {
      if (status >= 400 && isJson && !this.errorBody(body)) return [`${where}: not the error shape: ${this.ajv.errorsText(this.errorBody.errors)}`];
      return [];
    }
    this.recordCoverage(operation.operationId, status);
    const declared = operation.responses[String(status)];
    if (!declared) {
      return [`${where}: status ${status} is not declared for ${operation.method} ${operation.template} (declared: ${Object.keys(operation.responses).join(', ')}); body ${text.slice(0, 300)}`];
    }
    if (method.toUpperCase() === 'HEAD') return [];
    const json = declared.content?.['application/json'];
    if (!json) {
      const [media] = Object.keys(declared.content ?? {});
      if (media && !(contentType ?? '').startsWith(media)) return [`${where}: expected ${media}, got ${contentType ?? 'no Content-Type'}`];
      return [];
    }
    if (!isJson) return [`${where}: expected a JSON body, got ${contentType ?? 'no Content-Type'}: ${text.slice(0, 200)}`];
    const key = `${operation.method} ${operation.template} ${status}`;
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(rewriteRefs(json.schema) as object);
      this.validators.set(key, validate);
    }
    if (!validate(body)) {
      return [`${where}: the body does not match ${operation.method} ${operation.template} ${status}: ${this.ajv.errorsText(validate.errors)}; body ${text.slice(0, 500)}`];
    }
    // A refusal's code must be one the status declares for the operation (the shared Error schema allows any).
    const codes = declared['x-error-codes'];
    const code = this.errorBody(body) ? (body as { error: { code: string } }).error.code : undefined;
    if (codes && code !== undefined && !codes.includes(code)) {
      return [`${where}: the body does not match ${operation.method} ${operation.template} ${status}: error code ${code} is not one of its x-error-codes (${codes.join(', ')})`];
    }
    return [];
  }
}

/**
 * Where each test process notes the operations and statuses it saw (set by the suite's
 * global set-up, which reports the operations no test drove).
 */
export const OPENAPI_COVERAGE_DIR_VARIABLE = 'ENVENGINE_OPENAPI_COVERAGE_DIR';

let shared: OpenApiResponseChecker | undefined;

/** One checker per test process (compiling the document's schemas once). */
export function openApiResponseChecker(): OpenApiResponseChecker {
  shared ??= new OpenApiResponseChecker();
  return shared;
}

/** What the suite drove: each operation's statuses seen, and the operations never called. */
export function openApiCoverage(dir: string, document: OpenApiDocument = buildOpenApiDocument()): { seen: Map<string, Set<number>>; never: string[] } {
  const seen = new Map<string, Set<number>>();
  for (const file of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      const [operationId, status] = line.split(' ');
      if (!operationId || !status) continue;
      if (!seen.has(operationId)) seen.set(operationId, new Set());
      seen.get(operationId)!.add(Number(status));
    }
  }
  const all = Object.values(document.paths).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId));
  return { seen, never: all.filter((operationId) => !seen.has(operationId)) };
}
