import { readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Every Node built-in, with and without `node:` (builtinModules lists `node:`-only ones such as `node:sqlite` with it).
const NODE_BUILTINS = [...new Set(builtinModules.flatMap((name) => (name.startsWith('node:') ? [name] : [name, `node:${name}`])))];

// A lib is reached through its public entry only (or a second one its package.json
// exports: `testing`, and materialization-storage's `codec`, what the sandboxed asset
// child bundles without the storage drivers). Repeated in every block that sets
// `no-restricted-imports`, since a later block's setting replaces an earlier one's.
const DEEP_IMPORT_PATTERNS = [
  { group: ['@envengine/*/*', '!@envengine/*/testing', '!@envengine/materialization-storage/codec', '!@envengine/contracts/workflow-inputs'], message: 'Import a lib through its public entry.' },
  // Nx refuses an app's path but cannot resolve an app's bare package name (apps export nothing).
  { group: readdirSync(new URL('apps', import.meta.url)).map((app) => `@envengine/${app}`), message: 'An app is never imported: share the code through a lib.' },
];

// Dev tooling and tests: they start servers, read the environment and look behind the API on purpose.
const DEV_AND_TESTS = ['**/*.test.ts', 'apps/api-e2e/**', 'libs/test-harness/**', 'libs/backing-servers/**', 'libs/dev-stack/**'];

// The libs and repositories that own stored data: the only places that touch the driver.
const DATA_ACCESS = ['libs/tenant-data/**', 'libs/deployment-data/**', 'libs/local-secret-store/**', 'libs/api-tokens/**', 'libs/event-log/**', 'libs/service-kit/src/mongo.ts'];

/**
 * Where a read across every tenant is allowed, each for its reason: the lease reaper and
 * the dispatcher's reconciler sweep every tenant's attempts (run.repository.ts), and the
 * engine runner's admission shares its slots across tenants (runner-shares.ts); a pool
 * credential is looked up by its token's hash before its tenant is known, and the
 * placement-service re-creates every live pool user in Redis (pool-credential.repository.ts).
 */
const ACROSS_TENANTS_ALLOWED = [
  'libs/tenant-data/**',
  // The outbox relay: pending rows of every tenant, in order.
  'libs/event-log/src/event-outbox.ts',
  'apps/placement-service/src/runs/run.repository.ts',
  'apps/placement-service/src/runs/run-slots.ts',
  // The engine runner's fair shares: slots held and attempts waiting, by tenant.
  'apps/placement-service/src/runs/runner-shares.ts',
  // The metrics' gauges: live workers of every tenant.
  'apps/placement-service/src/runs/worker-registry.ts',
  'apps/placement-service/src/pool/pool-credential.repository.ts',
  // Tear-downs to resume and expiry timers to re-arm at start-up.
  'apps/placement-service/src/environments/environment.repository.ts',
  // The tick loops: a shard's due schedules, of every tenant (each then ticked under its own tenant).
  'apps/placement-service/src/schedules/stored-schedules.repository.ts',
  // The webhook sweep: streams of every tenant with a delivery due whose queue job was lost (each then worked under its own tenant).
  'apps/placement-service/src/webhooks/webhook-delivery.repository.ts',
];

const RAW_DRIVER = [
  {
    selector: 'MemberExpression[property.name=/^(collection|db)$/]',
    message: 'Reach stored data through its data-access lib (a typed model; TenantScopedModel for tenant data), not the driver.',
  },
  {
    selector: "CallExpression[callee.property.name=/^(insertMany|updateOne|updateMany|replaceOne|deleteOne|deleteMany|findOneAndUpdate|findOneAndReplace|findOneAndDelete|bulkWrite)$/][arguments.0.type='ObjectExpression']",
    message: 'A write with a filter first is tenant-less: write tenant data through TenantScopedModel, whose methods take the tenant first.',
  },
];
const ACROSS_TENANTS = {
  selector: "MemberExpression[property.name=/^(findAcrossTenants|countAcrossTenants)$/]",
  message: 'Reads across tenants are allowed only where eslint.config.mjs names the file and its reason (ACROSS_TENANTS_ALLOWED).',
};

// A path of the engine's APIs is named once, in its route table (`PublicApi`, `InternalApi`),
// and called through `requestRoute` (or built with `routeExchange`/`routePath`), so that a
// renamed path or field breaks every caller's build. A string or template that starts with
// `/api/` or `/internal/`, or a template with such a piece after an expression
// (`${origin}/internal/v1/…`), is a path written by hand; prose that quotes a path is not.
const API_PATH = /^\/(?:api|internal)\//;
const isHandWritten = (text) => API_PATH.test(text);
const envenginePlugin = {
  rules: {
    'no-hand-written-api-path': {
      meta: {
        type: 'problem',
        schema: [],
        messages: {
          handWritten:
            '"{{text}}" is an API path written by hand: call the route of PublicApi or InternalApi (@envengine/contracts) through requestRoute, or build its path with routeExchange/routePath.',
        },
      },
      create(context) {
        return {
          Literal(node) {
            if (typeof node.value === 'string' && isHandWritten(node.value)) context.report({ node, messageId: 'handWritten', data: { text: node.value } });
          },
          // Every literal piece of a template, not only its head: `${origin}/internal/v1/x` is as hand-written.
          TemplateLiteral(node) {
            const piece = node.quasis.map((quasi) => quasi.value.cooked ?? '').find(isHandWritten);
            if (piece !== undefined) context.report({ node, messageId: 'handWritten', data: { text: node.quasis.map((quasi) => quasi.value.cooked ?? '').join('…') } });
          },
        };
      },
    },
  },
};

/**
 * Where `/api/…` or `/internal/…` may be written: the files that name a base or a mount
 * point, not a route's path, each for its reason.
 */
const API_BASE_ALLOWED = [
  // The bases themselves: PUBLIC_API_BASE and INTERNAL_API_BASE, which every route carries.
  'libs/contracts/src/route-contract.ts',
  // The gateway mounts the public API at its base and forwards each request under it.
  'apps/gateway/src/gateway-app.ts',
  // The gateway's table of public paths (methods allowed, metrics labels) matches the paths under its mount.
  'apps/gateway/src/proxy/public-routes.ts',
  // Every service mounts its public router at the public base and its private ones at the internal base.
  'libs/service-kit/src/create-service-app.ts',
  // The OpenAPI document's own address and its `servers` URL (the base its paths are relative to).
  'libs/openapi-document/src/openapi-document.ts',
];

/** `env` from `process`: configuration is read once, by the app's config. */
const ENV_IMPORT_PATHS = ['process', 'node:process'].map((name) => ({ name, importNames: ['env'], message: 'Read configuration in the app config (parsed once at start) and pass it in.' }));

/**
 * Activity modules that still call another scope's service, each for its reason. Every other
 * activity runs in the service that owns the data it changes (docs/design.md, "A task queue
 * per scope").
 */
const ACTIVITIES_CALLING_OTHER_SCOPES = [
  // An activation moves the placement-service's pointer to the active deployment and its
  // stored schedules: one owner of that fact is not built yet (docs/design.md).
  'apps/workflow-worker/src/activities/deployment-activities.ts',
  'apps/workflow-worker/src/activities/schedule-activities.ts',
  // The placement and secrets steps of histories begun before their scopes' queues.
  'apps/workflow-worker/src/activities/lifecycle-activities.ts',
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.nx/**', '.envengine/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    languageOptions: {
      // One program for the whole workspace (tsconfig.json), as `tsc` checks it: a program per
      // project read each lib's sources again in every project that imports it (docs/decisions.md).
      parserOptions: { project: ['./tsconfig.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          // Who may import whom: by type (layer) and by scope (owning service).
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:contracts', 'type:util', 'type:data-access', 'type:client', 'type:workflows', 'type:queues', 'type:rules'] },
            { sourceTag: 'type:rules', onlyDependOnLibsWithTags: ['type:contracts', 'type:rules'] },
            { sourceTag: 'type:workflows', onlyDependOnLibsWithTags: ['type:contracts', 'type:rules'] },
            { sourceTag: 'type:data-access', onlyDependOnLibsWithTags: ['type:contracts', 'type:util', 'type:data-access'] },
            { sourceTag: 'type:client', onlyDependOnLibsWithTags: ['type:contracts', 'type:util', 'type:rules'] },
            { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:contracts', 'type:util'] },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts'] },
            { sourceTag: 'type:queues', onlyDependOnLibsWithTags: ['type:contracts', 'type:util'] },
            { sourceTag: 'type:dev-infra', onlyDependOnLibsWithTags: ['type:contracts', 'type:util', 'type:data-access', 'type:dev-infra', 'type:queues'] },
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:contracts', 'type:util', 'type:data-access', 'type:client', 'type:dev-infra', 'type:testing'] },
            { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:contracts', 'type:util', 'type:data-access', 'type:client', 'type:dev-infra', 'type:testing', 'type:workflows', 'type:queues', 'type:rules'] },
            { sourceTag: 'type:tools', onlyDependOnLibsWithTags: ['type:contracts', 'type:util', 'type:data-access', 'type:client', 'type:dev-infra', 'type:testing', 'type:rules', 'type:queues'] },
            { sourceTag: 'scope:gateway', onlyDependOnLibsWithTags: ['scope:shared', 'scope:gateway'] },
            { sourceTag: 'scope:placement', onlyDependOnLibsWithTags: ['scope:shared', 'scope:placement'] },
            { sourceTag: 'scope:deployment', onlyDependOnLibsWithTags: ['scope:shared', 'scope:deployment'] },
            { sourceTag: 'scope:secrets', onlyDependOnLibsWithTags: ['scope:shared', 'scope:secrets'] },
            { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
            // The command-line client speaks only the public API: contracts and shared helpers.
            { sourceTag: 'scope:cli', onlyDependOnLibsWithTags: ['scope:shared'] },
            // Operator commands (key rotation, tokens), the dev stack, its test harness and the integration suite work across every scope.
            { sourceTag: 'scope:operations', onlyDependOnLibsWithTags: ['scope:shared', 'scope:gateway', 'scope:placement', 'scope:deployment', 'scope:secrets', 'scope:operations'] },
          ],
        },
      ],
      'no-restricted-imports': ['error', { patterns: DEEP_IMPORT_PATTERNS }],
    },
  },
  {
    // Stored data is written through typed models (schema-cast and validated), and tenant
    // data through TenantScopedModel: never through the driver's collection or database
    // objects, never by a model write whose first argument is a filter (a tenant-less
    // write: TenantScopedModel's writes take the tenant first), and across tenants only
    // where named (ACROSS_TENANTS_ALLOWED).
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: [...DEV_AND_TESTS, ...DATA_ACCESS, ...ACROSS_TENANTS_ALLOWED],
    rules: { 'no-restricted-syntax': ['error', ...RAW_DRIVER, ACROSS_TENANTS] },
  },
  {
    // The files allowed to read across tenants keep the other data rules.
    files: ACROSS_TENANTS_ALLOWED,
    ignores: DATA_ACCESS,
    rules: { 'no-restricted-syntax': ['error', ...RAW_DRIVER] },
  },
  {
    // Configuration is read once at start-up, through a schema, by each app's entry point.
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: ['apps/*/src/main.ts', 'apps/*/src/config.ts', ...DEV_AND_TESTS],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read configuration in the app config (parsed once at start) and pass it in.' },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: ENV_IMPORT_PATHS,
          patterns: DEEP_IMPORT_PATTERNS,
        },
      ],
    },
  },
  {
    // Workflow code is replayed by Temporal and must stay deterministic: no I/O, no Node.
    // The whole workflows lib (its definitions are imported by every workflow), and any
    // workflow file elsewhere.
    files: ['libs/deployment-workflows/src/**/*.ts', '**/*.workflow.ts', '**/workflows/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*.activities.ts', '**/activities/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: DEEP_IMPORT_PATTERNS,
          paths: [
            ...NODE_BUILTINS.map((name) => ({ name, message: 'Workflow code cannot use Node built-ins; do it in an activity.' })),
            ...['mongoose', 'mongodb', 'ioredis', 'bullmq', 'express', 'undici', 'pino', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'].map((name) => ({ name, message: 'Workflow code cannot do I/O; do it in an activity.' })),
            // Every module a workflow imports is evaluated again for each workflow it starts
            // (the SDK isolates their state): the contracts' whole entry built every schema of
            // the API each time, most of a workflow task's CPU. Types cost nothing.
            { name: '@envengine/contracts', allowTypeImports: true, message: 'Import values from @envengine/contracts/workflow-inputs: the whole entry is evaluated again for every workflow.' },
          ],
        },
      ],
      'no-restricted-globals': ['error', 'fetch', 'setInterval', 'process'],
    },
  },
  {
    // An activity changes its own scope's data, over its repositories, in the service that
    // owns it (served on that scope's task queue): never through another service's client.
    files: ['apps/*/src/**/*-activities.ts', 'apps/*/src/**/activities/**/*.ts'],
    ignores: ['**/*.test.ts', ...ACTIVITIES_CALLING_OTHER_SCOPES],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: DEEP_IMPORT_PATTERNS,
          paths: [
            ...ENV_IMPORT_PATHS,
            { name: '@envengine/service-clients', message: "An activity runs in the service that owns the data it changes, over its repositories: serve it on that scope's task queue (libs/temporal-worker), not through another service's client." },
          ],
        },
      ],
    },
  },
  {
    // No API path written by hand (API_PATH): callers go through the route tables.
    files: ['apps/*/src/**/*.ts', 'libs/*/src/**/*.ts'],
    ignores: ['**/*.test.ts', 'apps/api-e2e/**', ...API_BASE_ALLOWED],
    plugins: { envengine: envenginePlugin },
    rules: { 'envengine/no-hand-written-api-path': 'error' },
  },
);
