import { z } from 'zod';
import {
  Attempt,
  ManifestV1,
  AttemptStarted,
  AssetListing,
  Binding,
  BundleUploaded,
  DeletedEnvironment,
  DeletedResource,
  Deployment,
  DeploymentPending,
  EngineEvent,
  Environment,
  ErrorBody,
  EventActor,
  EventSubject,
  CreateRunForAssets,
  CreateRunForJob,
  httpStatusFor,
  Materialization,
  MaterializationPreview,
  PARQUET_MEDIA_TYPE,
  PlacementResult,
  PoolCredentialIssued,
  PoolCredentialRevoked,
  ApiToken,
  PoolStatus,
  PublicApi,
  ResolvedConnection,
  Run,
  RunLogLine,
  Schedule,
  ScheduleNextFireTimes,
  SecretRow,
  StorageConnection,
  UpstreamSource,
  UpstreamLocation,
  WorkerHeartbeatResponse,
  type Endpoint,
  type ErrorCode,
  type OperationId,
} from '@envengine/contracts';
// The document's version (info.version), kept in this package's own package.json: raised
// when the public API changes, so that a generated client can tell what it was made from.
import documentPackage from '../package.json' with { type: 'json' };

/** Where the document is served, relative to the gateway's origin (no token needed). */
export const OPENAPI_DOCUMENT_PATH = '/api/v1/openapi.json';

type JsonSchema = Record<string, unknown>;
export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, OperationObject>> };
type OperationObject = Record<string, unknown> & { operationId: string; responses: Record<string, Record<string, unknown>> };

/** Shapes that several operations answer with, each one component under its own name. */
const NAMED_SCHEMAS: Record<string, z.ZodType> = {
  Environment,
  PlacementResult,
  DeletedEnvironment,
  Run,
  Attempt,
  RunLogLine,
  Schedule,
  ScheduleNextFireTimes,
  PoolStatus,
  PoolCredentialIssued,
  PoolCredentialRevoked,
  ApiToken,
  WorkerHeartbeatResponse,
  AttemptStarted,
  UpstreamLocation,
  UpstreamSource,
  ResolvedConnection,
  StorageConnection,
  Materialization,
  MaterializationPreview,
  Deployment,
  DeploymentPending,
  AssetListing,
  BundleUploaded,
  SecretRow,
  Binding,
  DeletedResource,
  // The error envelope every refusal answers with, one component (each response names its codes in `x-error-codes`).
  Error: ErrorBody,
  // An event (`GET /events`, a webhook's delivery): the union, each type's variant, and the fields they share.
  Event: EngineEvent,
  EventSubject,
  EventActor,
  ...Object.fromEntries(eventVariants().map((variant) => [eventComponentId(variant), variant])),
};

/** The run body's two forms, each a component (the body is one of them). */
const NAMED_REQUEST_SCHEMAS: Record<string, z.ZodType> = { CreateRunForJob, CreateRunForAssets, Manifest: ManifestV1 };

/** The variants of the event union, one per type. */
function eventVariants(): z.ZodObject[] {
  return (EngineEvent as unknown as z.ZodDiscriminatedUnion<z.ZodObject[]>).options;
}

/** `run.queued` → `RunQueuedEvent`, `webhook.secret_rotated` → `WebhookSecretRotatedEvent`. */
function eventComponentId(variant: z.ZodObject): string {
  const type = (variant.shape.type as z.ZodLiteral<string>).value;
  return `${type.split(/[._]/).map((word) => word[0]!.toUpperCase() + word.slice(1)).join('')}Event`;
}

/**
 * Where a created resource is named next: the operation that creates it, the status it
 * answers then, and the path params it gives every operation under `under` (runtime
 * expressions of OpenAPI links). Clients and the fuzzer's stateful phase follow them.
 */
const RESOURCE_LINKS: readonly { from: OperationId; status: number; under: string; params: Record<string, string> }[] = [
  { from: 'createEnvironment', status: 201, under: '/environments/:name', params: { name: '$response.body#/data/name' } },
  { from: 'putSecret', status: 201, under: '/environments/:name/secrets/:secret', params: { name: '$request.path.name', secret: '$response.body#/data/name' } },
  { from: 'putBinding', status: 201, under: '/environments/:name/bindings/:connection', params: { name: '$request.path.name', connection: '$response.body#/data/name' } },
  { from: 'createDeployment', status: 201, under: '/deployments/:id', params: { id: '$response.body#/data/id' } },
  { from: 'createRun', status: 201, under: '/runs/:id', params: { id: '$response.body#/data/id' } },
  { from: 'createPoolCredential', status: 201, under: '/pool/credentials/:id', params: { id: '$response.body#/data/id' } },
];

/** The path params of an Express path, in order. */
function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((match) => match[1]!);
}

/** Refusals any route can give: a token refused, a rate limit, an engine fault or outage. */
const EVERY_ROUTE_ERRORS: readonly ErrorCode[] = ['unauthorized', 'rate_limited', 'internal_error', 'unavailable'];

const componentRef = (id: string) => `#/components/schemas/${id}`;
const pascal = (operationId: string) => operationId[0]!.toUpperCase() + operationId.slice(1);

/** `/environments/:name` → `/environments/{name}`. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

/** Every refusal an endpoint can answer with: its own and those its input and method bring. */
export function errorCodesOf(endpoint: Endpoint): ErrorCode[] {
  const codes = new Set<ErrorCode>([...EVERY_ROUTE_ERRORS, ...endpoint.errors]);
  // An API token may lack the operation's scope, or have lapsed.
  if (endpoint.auth === 'api_token') {
    codes.add('insufficient_scope');
    codes.add('token_expired');
  }
  // A name that was a preview its TTL tore down answers `environment_expired` for a week, wherever it is looked up.
  if (endpoint.path === '/environments/:name' || endpoint.path.startsWith('/environments/:name/')) codes.add('environment_expired');
  if (endpoint.params || endpoint.query || endpoint.body || endpoint.headers?.length) codes.add('invalid_request');
  if (endpoint.body !== undefined) {
    codes.add('payload_too_large');
    if (typeof endpoint.body !== 'string') codes.add('invalid_json');
  }
  // The gateway keeps a POST's answer per Idempotency-Key (not an upload's: it is streamed).
  if (endpoint.method === 'post' && endpoint.body !== 'application/gzip') {
    codes.add('invalid_request');
    codes.add('idempotency_key_reused');
    codes.add('idempotency_key_in_use');
  }
  return [...codes];
}

function withoutDialect(schema: JsonSchema): JsonSchema {
  const { $schema: _dialect, $id: _uri, ...rest } = schema;
  return rest;
}

function envelope(data: JsonSchema): JsonSchema {
  return { type: 'object', properties: { data }, required: ['data'], additionalProperties: false };
}

function parametersOf(where: 'path' | 'query', schema: z.ZodType | undefined): Record<string, unknown>[] {
  if (!schema) return [];
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...propertySchema } = property;
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      ...(description ? { description } : {}),
      schema: propertySchema,
    };
  });
}

/**
 * The OpenAPI 3.1 document of the public API, generated from the endpoint table of
 * `@envengine/contracts` (PublicApi) and the zod schemas it names: the same objects the
 * services validate requests with and type their answers by.
 */
export function buildOpenApiDocument(): OpenApiDocument {
  const endpoints = Object.entries(PublicApi) as [string, Endpoint][];

  // Answers: the named shapes, and per operation whatever else it answers with.
  const responseRegistry = z.registry<{ id: string }>();
  const responseIds = new Map<z.ZodType, string>();
  for (const [id, schema] of Object.entries(NAMED_SCHEMAS)) {
    responseRegistry.add(schema, { id });
    responseIds.set(schema, id);
  }
  for (const [operationId, endpoint] of endpoints) {
    for (const [status, response] of Object.entries(endpoint.responses)) {
      if (typeof response === 'string' || responseIds.has(response)) continue;
      const distinct = new Set(Object.values(endpoint.responses).filter((value) => typeof value !== 'string')).size > 1;
      const id = `${pascal(operationId)}Response${distinct ? status : ''}`;
      responseRegistry.add(response, { id });
      responseIds.set(response, id);
    }
  }
  const responseSchemas = z.toJSONSchema(responseRegistry, { io: 'output', unrepresentable: 'any', uri: componentRef }).schemas;

  // Request bodies, as a client may send them (defaults make fields optional).
  const requestRegistry = z.registry<{ id: string }>();
  const requestIds = new Map<string, string>();
  for (const [id, schema] of Object.entries(NAMED_REQUEST_SCHEMAS)) requestRegistry.add(schema, { id });
  for (const [operationId, endpoint] of endpoints) {
    const body = endpoint.describedBody ?? endpoint.body;
    if (body === undefined || typeof body === 'string') continue;
    const id = `${pascal(operationId)}Request`;
    requestRegistry.add(body, { id });
    requestIds.set(operationId, id);
  }
  const requestSchemas = z.toJSONSchema(requestRegistry, {
    io: 'input',
    unrepresentable: 'any',
    uri: componentRef,
    override: ({ jsonSchema }) => {
      // A field with a default is optional in a request (zod's input type, which leaves it out of `required`), and
      // the default is said in words: openapi-typescript's default flags make any property with a `default` keyword
      // required in a component schema, which would have every generated client send what the engine fills in.
      if ('default' in jsonSchema) {
        const { default: value, description } = jsonSchema;
        delete jsonSchema.default;
        jsonSchema.description = `${description ? `${description} ` : ''}Default: ${JSON.stringify(value)}.`;
      }
      // A union of request bodies whose forms exclude each other (each a closed object): one of them.
      if (Array.isArray(jsonSchema.anyOf) && jsonSchema.anyOf.every((member) => typeof member === 'object' && '$ref' in member)) {
        jsonSchema.oneOf = jsonSchema.anyOf;
        delete jsonSchema.anyOf;
      }
    },
  }).schemas;

  const schemas: Record<string, JsonSchema> = {};
  for (const [id, schema] of [...Object.entries(responseSchemas), ...Object.entries(requestSchemas)]) {
    schemas[id] = withoutDialect(schema as JsonSchema);
  }

  const paths: OpenApiDocument['paths'] = {};
  for (const [operationId, endpoint] of endpoints) {
    const path = openApiPath(endpoint.path);
    const noBodies = endpoint.method === 'head';
    const responses: Record<string, Record<string, unknown>> = {};

    for (const [status, response] of Object.entries(endpoint.responses)) {
      if (response === 'empty' || noBodies) {
        responses[status] = { description: endpoint.summary };
      } else if (response === 'application/gzip') {
        responses[status] = { description: 'The bundle, tar.gz', content: { 'application/gzip': { schema: {} } } };
      } else if (response === PARQUET_MEDIA_TYPE) {
        responses[status] = {
          description: status === '206' ? 'The requested byte range of the Parquet file' : 'The Parquet file',
          content: { [PARQUET_MEDIA_TYPE]: { schema: { type: 'string', format: 'binary' } } },
        };
      } else {
        responses[status] = {
          description: 'Success',
          content: { 'application/json': { schema: envelope({ $ref: componentRef(responseIds.get(response)!) }) } },
        };
      }
    }

    const codesByStatus = new Map<number, ErrorCode[]>();
    for (const code of errorCodesOf(endpoint)) {
      const status = httpStatusFor(code);
      codesByStatus.set(status, [...(codesByStatus.get(status) ?? []), code]);
    }
    for (const [status, codes] of [...codesByStatus].sort(([a], [b]) => a - b)) {
      // The one Error component; the codes this status can carry are the response's `x-error-codes`.
      const refusal: JsonSchema = { $ref: componentRef('Error') };
      const description = `Refused: ${codes.join(', ')}`;
      const retryAfter = codes.some((code) => code === 'rate_limited' || code === 'unavailable' || code === 'idempotency_key_in_use')
        ? { headers: { 'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'string' } } } }
        : {};
      const existing = responses[status];
      if (noBodies) {
        responses[status] = { description, 'x-error-codes': codes, ...retryAfter };
      } else if (existing) {
        // A status that answers both ways (an ingest's failed deployment is a 422, as is a refused body).
        const content = existing.content as Record<string, { schema: JsonSchema }>;
        const success = content['application/json']!.schema;
        responses[status] = {
          description: `${existing.description as string}, or ${description}`,
          'x-error-codes': codes,
          content: { 'application/json': { schema: { anyOf: [success, refusal] } } },
        };
      } else {
        responses[status] = { description, 'x-error-codes': codes, ...retryAfter, content: { 'application/json': { schema: refusal } } };
      }
    }

    const parameters = [
      ...parametersOf('path', endpoint.params),
      ...parametersOf('query', endpoint.query),
      ...(endpoint.headers ?? []).map((header) => ({
        name: header.name,
        in: 'header',
        required: header.required,
        description: header.description,
        schema: header.pattern ? { type: 'string', pattern: header.pattern.source } : { type: 'string' },
      })),
    ];

    const operation: OperationObject = {
      operationId,
      summary: endpoint.summary,
      ...(endpoint.description ? { description: endpoint.description } : {}),
      tags: [endpoint.tag],
      // The scope an API token needs, as the requirement's list (OpenAPI 3.1 lets a bearer scheme name roles there).
      security: [endpoint.auth === 'pool_token' ? { poolToken: [] } : { apiToken: [endpoint.scope!] }],
      ...(endpoint.tenantWide ? { 'x-tenant-wide': true } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      responses,
    };
    if (endpoint.body === 'application/gzip') {
      // The raw tar.gz; `application/octet-stream` too, the media type generators make an upload of.
      const upload = { schema: { type: 'string', format: 'binary' } };
      operation.requestBody = { required: true, content: { 'application/octet-stream': upload, 'application/gzip': upload } };
    } else if (endpoint.body !== undefined) {
      operation.requestBody = {
        required: !endpoint.bodyOptional,
        content: { 'application/json': { schema: { $ref: componentRef(requestIds.get(operationId)!) } } },
      };
    }
    (paths[path] ??= {})[endpoint.method] = operation;
  }

  for (const link of RESOURCE_LINKS) {
    const producer = PublicApi[link.from] as Endpoint;
    const response = paths[openApiPath(producer.path)]![producer.method]!.responses[String(link.status)]!;
    const links: Record<string, unknown> = {};
    for (const [operationId, endpoint] of endpoints) {
      if (operationId === link.from || endpoint.auth !== 'api_token') continue;
      const under = endpoint.path === link.under || endpoint.path.startsWith(`${link.under}/`);
      const params = pathParamsOf(endpoint.path);
      // Only where the link gives every param the operation's path needs.
      if (!under || !params.every((param) => param in link.params)) continue;
      links[pascal(operationId)] = { operationId, parameters: Object.fromEntries(params.map((param) => [param, link.params[param]])) };
    }
    response.links = links;
  }

  return {
    openapi: '3.1.1',
    info: {
      title: 'envengine',
      version: documentPackage.version,
      description:
        'Environments, placement, deployments, bindings, secrets, schedules and runs of data pipelines. ' +
        `Every success answers {"data": …} and every refusal {"error": {"code", "message", "details"}}. ` +
        'No JSON body may use "__proto__" as an object key, at any depth (422 invalid_request naming where). ' +
        `This document is served at ${OPENAPI_DOCUMENT_PATH}.`,
    },
    servers: [{ url: '/api/v1' }],
    tags: [...new Set(endpoints.map(([, endpoint]) => endpoint.tag))].map((name) => ({ name })),
    security: [{ apiToken: [] }],
    paths,
    components: {
      securitySchemes: {
        apiToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API token of the tenant (POST /tokens, or the operator\'s admin command for the first). Each operation lists the scope it needs; ' +
            'a token without it is refused 403 `insufficient_scope`. A token limited to environments finds no other (404), and is refused the operations marked `x-tenant-wide`.',
        },
        poolToken: { type: 'http', scheme: 'bearer', description: 'A pool token (POST /pool/credentials): opens only /worker/….' },
      },
      schemas,
    },
  };
}

/** The document as written to docs/openapi.json and served: two-space JSON and a final newline. */
/**
 * The manifest's JSON Schema (docs/manifest.schema.json), from the same zod contract the
 * ingest checks with: for editors and CI checks of a `manifest.json`.
 */
export function serializedManifestSchema(): string {
  const schema = z.toJSONSchema(ManifestV1, { io: 'input', unrepresentable: 'any' });
  return `${JSON.stringify({ ...schema, title: 'envengine manifest, version 1' }, null, 2)}\n`;
}

export function serializedOpenApiDocument(): string {
  return `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
}
