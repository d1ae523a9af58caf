import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';

/**
 * Each rule AGENTS.md says the lint enforces, proven: a small violating fixture at a path
 * the rule covers must be refused with that rule, and the same code where the rule allows
 * it (or its compliant form) must pass. The fixtures are linted as text at those paths.
 */
const eslint = new ESLint({
  cwd: WORKSPACE_ROOT,
  // The fixtures are not files of a TypeScript project: parse them without type information
  // (the rules proven here are syntactic, and module boundaries read Nx's project graph).
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false, project: null } },
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
});

async function refusals(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${WORKSPACE_ROOT}/${filePath}` });
  return result!.messages.map((message) => `${message.ruleId ?? 'parse'}: ${message.message}`);
}

interface Fixture {
  rule: string;
  /** Where the violation is refused. */
  at: string;
  code: string;
  expected: RegExp;
  /** Where the same code is allowed (a data-access lib, the app's config, a test), if anywhere. */
  allowedAt?: string;
}

const FIXTURES: Fixture[] = [
  // Configuration is read once, by the app's config.
  { rule: 'process.env outside config', at: 'apps/gateway/src/routes/fixture.ts', code: 'export const port = process.env.PORT;\n', expected: /no-restricted-properties: .*app config/, allowedAt: 'apps/gateway/src/config.ts' },
  { rule: "env imported from 'node:process'", at: 'apps/gateway/src/routes/fixture.ts', code: "import { env } from 'node:process';\nexport const port = env.PORT;\n", expected: /no-restricted-imports: .*'env' import from 'node:process' is restricted/, allowedAt: 'apps/gateway/src/config.ts' },
  { rule: "env imported from 'process'", at: 'libs/service-kit/src/fixture.ts', code: "import { env } from 'process';\nexport const port = env.PORT;\n", expected: /no-restricted-imports: .*'env' import from 'process' is restricted/ },
  // Workflow code: no Node built-in (every one, from Node's own list), no I/O library, in the whole workflows lib.
  { rule: 'node:timers/promises in a workflow', at: 'libs/deployment-workflows/src/ingest.workflow.fixture.ts', code: "import { setTimeout } from 'node:timers/promises';\nexport const wait = setTimeout;\n", expected: /no-restricted-imports: .*Node built-ins/ },
  { rule: 'node:async_hooks in a workflow', at: 'libs/deployment-workflows/src/fixture.workflow.ts', code: "import { AsyncLocalStorage } from 'node:async_hooks';\nexport const store = new AsyncLocalStorage();\n", expected: /no-restricted-imports: .*Node built-ins/ },
  { rule: 'a built-in in the definitions every workflow imports', at: 'libs/deployment-workflows/src/definitions.ts', code: "import { randomUUID } from 'crypto';\nexport const id = randomUUID;\n", expected: /no-restricted-imports: .*Node built-ins/, allowedAt: 'apps/workflow-worker/src/activities/fixture.ts' },
  { rule: 'an I/O library in a workflow', at: 'libs/deployment-workflows/src/fixture.workflow.ts', code: "import mongoose from 'mongoose';\nexport const m = mongoose;\n", expected: /no-restricted-imports: .*cannot do I\/O/ },
  { rule: 'a deep import from a workflow file', at: 'libs/deployment-workflows/src/fixture.workflow.ts', code: "import { Run } from '@envengine/contracts/src/runs';\nexport const run = Run;\n", expected: /no-restricted-imports: .*public entry/ },
  { rule: 'a deep import elsewhere', at: 'apps/gateway/src/fixture.ts', code: "import { Run } from '@envengine/contracts/src/runs';\nexport const run = Run;\n", expected: /no-restricted-imports: .*public entry/ },
  // Values come from the contracts' narrow entry (every module a workflow imports is evaluated again per workflow); types from anywhere.
  { rule: 'a value from the whole contracts entry in a workflow', at: 'libs/deployment-workflows/src/fixture.workflow.ts', code: "import { IngestInput } from '@envengine/contracts';\nexport const input = IngestInput;\n", expected: /no-restricted-imports: .*workflow-inputs/, allowedAt: 'apps/workflow-worker/src/activities/fixture.ts' },
  { rule: 'fetch in a workflow', at: 'libs/deployment-workflows/src/fixture.workflow.ts', code: "export const get = () => fetch('http://x');\n", expected: /no-restricted-globals: .*fetch/ },
  { rule: 'setInterval in a workflow', at: 'libs/deployment-workflows/src/fixture.workflow.ts', code: 'export const tick = () => setInterval(() => undefined, 1000);\n', expected: /no-restricted-globals: .*setInterval/, allowedAt: 'apps/workflow-worker/src/activities/fixture.ts' },
  { rule: 'process in a workflow', at: 'libs/deployment-workflows/src/fixture.workflow.ts', code: 'export const pid = () => process.pid;\n', expected: /no-restricted-globals: .*process/, allowedAt: 'apps/workflow-worker/src/activities/fixture.ts' },
  // Any file under a workflows/ folder is workflow code, whatever its name and project.
  { rule: 'a built-in in a file under workflows/', at: 'apps/workflow-worker/src/workflows/fixture.ts', code: "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;\n", expected: /no-restricted-imports: .*Node built-ins/, allowedAt: 'apps/workflow-worker/src/fixture.ts' },
  // Stored data only through the data-access libs: no collection, no db, no tenant-less write.
  { rule: 'a raw collection write through a variable', at: 'apps/placement-service/src/runs/fixture.ts', code: 'declare const model: { collection: { insertOne(d: object): void } };\nconst raw = model.collection;\nraw.insertOne({});\n', expected: /no-restricted-syntax: .*not the driver/, allowedAt: 'libs/deployment-data/src/fixture.ts' },
  { rule: "conn.collection('runs')", at: 'apps/placement-service/src/runs/fixture.ts', code: "declare const conn: { collection(n: string): { updateOne(f: object, u: object): void } };\nconn.collection('runs').updateOne({}, {});\n", expected: /no-restricted-syntax: .*not the driver/ },
  { rule: "conn.db.collection('runs')", at: 'apps/secrets-service/src/fixture.ts', code: "declare const conn: { db: { collection(n: string): { deleteMany(f: object): void } } };\nconn.db.collection('runs').deleteMany({});\n", expected: /no-restricted-syntax: .*not the driver/ },
  { rule: 'a tenant-less model write', at: 'apps/placement-service/src/environments/fixture.ts', code: "declare const model: { updateOne(f: object, u: object): void };\nmodel.updateOne({ _id: 'env_1' }, { $set: { paused: true } });\n", expected: /no-restricted-syntax: .*tenant-less/, allowedAt: 'libs/tenant-data/src/fixture.ts' },
  { rule: 'findAcrossTenants outside the named files', at: 'apps/placement-service/src/environments/fixture.ts', code: "declare const runs: { findAcrossTenants(f: object): void };\nruns.findAcrossTenants({ _id: 'att_1' });\n", expected: /no-restricted-syntax: .*Reads across tenants/, allowedAt: 'apps/placement-service/src/runs/run.repository.ts' },
  // Layers and scopes (Nx's project graph): an app reaches only its own scope's libs.
  { rule: "the gateway importing the deployment scope's data", at: 'apps/gateway/src/fixture.ts', code: "import { DeploymentRepository } from '@envengine/deployment-data';\nexport const r = DeploymentRepository;\n", expected: /@nx\/enforce-module-boundaries: .*scope:gateway/ },
  { rule: 'a workflow lib importing a data-access lib', at: 'libs/deployment-workflows/src/fixture.ts', code: "import { DeploymentRepository } from '@envengine/deployment-data';\nexport const r = DeploymentRepository;\n", expected: /@nx\/enforce-module-boundaries: .*type:workflows/ },
  { rule: 'a queues lib importing a data-access lib', at: 'libs/attempt-queues/src/fixture.ts', code: "import { TenantScopedModel } from '@envengine/tenant-data';\nexport const m = TenantScopedModel;\n", expected: /@nx\/enforce-module-boundaries: .*type:queues/ },
  { rule: 'a rules lib importing a data-access lib', at: 'libs/schedule-timing/src/fixture.ts', code: "import { TenantScopedModel } from '@envengine/tenant-data';\nexport const m = TenantScopedModel;\n", expected: /@nx\/enforce-module-boundaries: .*type:rules/ },
  { rule: 'a rules lib importing a util lib', at: 'libs/manifest-rules/src/fixture.ts', code: "import { connectRedis } from '@envengine/redis-connections';\nexport const c = connectRedis;\n", expected: /@nx\/enforce-module-boundaries: .*type:rules/, allowedAt: 'apps/placement-service/src/fixture.ts' },
  // An app is never imported, by its package name, its path or a relative path.
  { rule: "an app importing another app's package", at: 'apps/gateway/src/fixture.ts', code: "import { loadPlacementConfig } from '@envengine/placement-service';\nexport const c = loadPlacementConfig;\n", expected: /no-restricted-imports: .*An app is never imported/ },
  { rule: "an app importing another app's file", at: 'apps/gateway/src/fixture.ts', code: "import { loadPlacementConfig } from '@envengine/placement-service/src/config.ts';\nexport const c = loadPlacementConfig;\n", expected: /@nx\/enforce-module-boundaries: Imports of apps are forbidden/ },
  { rule: "an app importing another app's file by a relative path", at: 'apps/gateway/src/fixture.ts', code: "import { loadPlacementConfig } from '../../placement-service/src/config.ts';\nexport const c = loadPlacementConfig;\n", expected: /@nx\/enforce-module-boundaries: Projects cannot be imported by a relative/ },
  // An activity changes its own scope's data in the service that owns it, never through another service's client.
  { rule: "an activity importing another scope's client", at: 'apps/placement-service/src/runs/fixture-activities.ts', code: "import { SecretsClient } from '@envengine/service-clients';\nexport const c = SecretsClient;\n", expected: /no-restricted-imports: .*An activity runs in the service that owns the data/, allowedAt: 'apps/placement-service/src/runs/fixture.ts' },
  { rule: "an activity under activities/ importing another scope's client", at: 'apps/workflow-worker/src/activities/fixture.ts', code: "import { PlacementClient } from '@envengine/service-clients';\nexport const c = PlacementClient;\n", expected: /no-restricted-imports: .*An activity runs in the service that owns the data/ },
  // No API path written by hand: callers reach a route through its table (PublicApi, InternalApi) and requestRoute.
  { rule: 'a hand-written public API path', at: 'apps/cli/src/commands/fixture.ts', code: "export const path = '/api/v1/environments';\n", expected: /envengine\/no-hand-written-api-path: .*PublicApi or InternalApi .*requestRoute/, allowedAt: 'libs/contracts/src/route-contract.ts' },
  { rule: 'a hand-written internal API path in a template', at: 'libs/service-clients/src/fixture.ts', code: "declare const id: string;\nexport const path = `/internal/v1/environments/${encodeURIComponent(id)}/expire`;\n", expected: /envengine\/no-hand-written-api-path: .*InternalApi/, allowedAt: 'libs/service-kit/src/create-service-app.ts' },
  { rule: 'a hand-written API base inside a template, after an origin', at: 'libs/test-harness/src/fixture.ts', code: "declare const origin: string;\nexport const url = `${origin}/internal/v1/bindings/resolve`;\n", expected: /envengine\/no-hand-written-api-path: .*InternalApi/, allowedAt: 'libs/service-kit/src/create-service-app.ts' },
];

describe('the rules AGENTS.md says the lint enforces', () => {
  for (const fixture of FIXTURES) {
    it(`refuses ${fixture.rule}`, async () => {
      const messages = await refusals(fixture.at, fixture.code);
      expect(messages.some((message) => fixture.expected.test(message)), messages.join('\n') || '(nothing refused)').toBe(true);
      if (fixture.allowedAt) {
        const allowed = (await refusals(fixture.allowedAt, fixture.code)).filter((message) => fixture.expected.test(message));
        expect(allowed, `allowed at ${fixture.allowedAt}`).toEqual([]);
      }
    });
  }
});
