import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

const NODE_BUILTINS = [
  'assert', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs', 'fs/promises',
  'http', 'http2', 'https', 'net', 'os', 'path', 'perf_hooks', 'process', 'readline', 'stream', 'timers',
  'tls', 'url', 'util', 'v8', 'vm', 'worker_threads', 'zlib',
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.nx/**', '.envengine/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
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
            { sourceTag: 'type:queues', onlyDependOnLibsWithTags: ['type:contracts'] },
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
      // A lib is reached through its public entry only.
      'no-restricted-imports': ['error', { patterns: [{ group: ['@envengine/*/*', '!@envengine/*/testing'], message: 'Import a lib through its public entry.' }] }],
    },
  },
  {
    // Stored data is written through typed models (schema-cast and validated), and tenant
    // data through TenantScopedModel: never by raw driver calls on a model's collection.
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: ['**/*.test.ts', 'apps/api-e2e/**', 'libs/test-harness/**', 'libs/backing-servers/**', 'libs/dev-stack/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.property.name='collection'][callee.property.name=/^(insertOne|insertMany|updateOne|updateMany|replaceOne|deleteOne|deleteMany|findOneAndUpdate|findOneAndReplace|findOneAndDelete|bulkWrite)$/]",
          message: 'Write through the typed model (TenantScopedModel for tenant data), not the raw collection.',
        },
      ],
    },
  },
  {
    // Configuration is read once at start-up, through a schema, by each app's entry point.
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: ['apps/*/src/main.ts', 'apps/*/src/config.ts', '**/*.test.ts', 'libs/backing-servers/**', 'libs/dev-stack/**', 'libs/test-harness/**'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration in the app config (parsed once at start) and pass it in.' }],
    },
  },
  {
    // Workflow code is replayed by Temporal and must stay deterministic: no I/O, no Node.
    files: ['**/*.workflow.ts', '**/workflows/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*.activities.ts', '**/activities/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...NODE_BUILTINS.flatMap((name) => [name, `node:${name}`]).map((name) => ({ name, message: 'Workflow code cannot use Node built-ins; do it in an activity.' })),
            ...['mongoose', 'mongodb', 'ioredis', 'bullmq', 'express', 'undici', 'pino', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'].map((name) => ({ name, message: 'Workflow code cannot do I/O; do it in an activity.' })),
          ],
        },
      ],
      'no-restricted-globals': ['error', 'fetch', 'setInterval', 'process'],
    },
  },
);
