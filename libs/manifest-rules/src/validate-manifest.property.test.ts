import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cronExpressionProblem } from '@envengine/schedule-timing';
import { ColumnType, ManifestV1 } from '@envengine/contracts';
import { ValidationErrorCode, ValidationWarningCode, type BindingMode, type ValidationContext } from './validation-issue.ts';
import { validateManifest } from './validate-manifest.ts';

// ---- arbitraries ------------------------------------------------------------------------

const resourceName = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,11}$/).filter((name) => !name.includes('..'));
// Lower case only, so that a column named "Added" (see contract changes below) is always new.
const columnName = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/);
const label = fc.string({ minLength: 1, maxLength: 8 });
const VALID_CRONS = ['0 2 * * *', '*/15 * * * *', '0 0 1 JAN *', '@daily', '0 9 * * MON-FRI', '0-30/5 8-18 * * 1,3,5'];
const ZONES = ['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Tokyo'];

type Json = Record<string, unknown>;

interface Scenario {
  /** The manifest as a client would send it: optional fields sometimes left out. */
  manifest: { version: 1; assets: Json[]; jobs?: Json[]; schedules?: Json[] };
  bindings: Map<string, { mode: BindingMode }>;
  bundleEntries: Set<string>;
}

const column = fc.record({
  name: columnName,
  type: fc.constantFrom(...ColumnType.options),
  nullable: fc.option(fc.boolean(), { nil: undefined }),
});

/** An asset with key `key` whose deps are only assets declared before it. */
function assetArbitrary(key: string, earlierKeys: readonly string[], bindingNames: readonly string[]) {
  return fc
    .record({
      binding: fc.constantFrom(...bindingNames),
      deps: fc.option(fc.subarray([...earlierKeys]), { nil: undefined }),
      columns: fc.option(fc.uniqueArray(column, { selector: (spec) => spec.name, maxLength: 5 }), { nil: undefined }),
      entryWithDotSlash: fc.boolean(),
    })
    .map(({ binding, deps, columns, entryWithDotSlash }) => {
      const asset: Json = { key, binding, entry: `${entryWithDotSlash ? './' : ''}assets/${key}.js` };
      if (deps !== undefined) asset.deps = deps;
      if (columns !== undefined) {
        asset.schema = {
          columns: columns.map(({ nullable, ...rest }) => (nullable === undefined ? rest : { ...rest, nullable })),
        };
      }
      return asset;
    });
}

/** A manifest with no error against its own bindings and bundle (warnings are allowed). */
const wellFormedScenario: fc.Arbitrary<Scenario> = fc
  .record({
    keys: fc.uniqueArray(resourceName, { maxLength: 12 }),
    bindings: fc.uniqueArray(fc.tuple(resourceName, fc.constantFrom<BindingMode>('live', 'read_only')), {
      minLength: 1,
      maxLength: 3,
      selector: ([name]) => name,
    }),
    jobNames: fc.uniqueArray(label, { maxLength: 3 }),
    scheduleNames: fc.uniqueArray(label, { maxLength: 3 }),
    extraBundleFiles: fc.array(fc.string({ maxLength: 12 }), { maxLength: 3 }),
    archiveWritesDotSlash: fc.boolean(),
  })
  .chain(({ keys, bindings, jobNames, scheduleNames, extraBundleFiles, archiveWritesDotSlash }) => {
    const bindingNames = bindings.map(([name]) => name);
    const assets = fc.tuple(...keys.map((key, index) => assetArbitrary(key, keys.slice(0, index), bindingNames)));
    const usableJobNames = keys.length === 0 ? [] : jobNames;
    const jobs = fc.tuple(
      ...usableJobNames.map((name) => fc.record({ name: fc.constant(name), assets: fc.subarray(keys, { minLength: 1 }) })),
    );
    const schedules = fc.tuple(
      ...(usableJobNames.length === 0 ? [] : scheduleNames).map((name) =>
        fc
          .record({
            job: fc.constantFrom(...usableJobNames),
            cron: fc.constantFrom(...VALID_CRONS),
            timezone: fc.option(fc.constantFrom(...ZONES), { nil: undefined }),
          })
          .map(({ timezone, ...rest }): Json => (timezone === undefined ? { name, ...rest } : { name, ...rest, timezone })),
      ),
    );
    const listsPresent = fc.boolean();
    return fc.tuple(assets, jobs, schedules, listsPresent, listsPresent).map(([assetList, jobList, scheduleList, withJobs, withSchedules]) => {
      // Empty jobs and schedules lists are sometimes left out, as a client may do.
      const manifest: Scenario['manifest'] = { version: 1, assets: assetList };
      if (withJobs || jobList.length > 0) manifest.jobs = jobList;
      if (withSchedules || scheduleList.length > 0) manifest.schedules = scheduleList;
      const prefix = archiveWritesDotSlash ? './' : '';
      return {
        manifest,
        bindings: new Map(bindings.map(([name, mode]) => [name, { mode }])),
        bundleEntries: new Set([...keys.map((key) => `${prefix}assets/${key}.js`), ...extraBundleFiles]),
      };
    });
  });

function contextFor(scenario: Scenario, overrides: Partial<ValidationContext> = {}): ValidationContext {
  return {
    bindings: scenario.bindings,
    bundleEntries: scenario.bundleEntries,
    activeManifest: null,
    strict: false,
    allowContractChanges: [],
    ...overrides,
  };
}

const ACTIVE_EXAMPLE = ManifestV1.parse({
  version: 1,
  assets: [
    { key: 'a', binding: 'warehouse', entry: 'a.js', schema: { columns: [{ name: 'id', type: 'integer' }] } },
    { key: 'b', binding: 'warehouse', entry: 'b.js' },
  ],
});

/** Any context, including ones that make no sense together. */
const anyContext: fc.Arbitrary<ValidationContext> = fc.record({
  bindings: fc
    .array(fc.tuple(fc.string({ maxLength: 8 }), fc.constantFrom<BindingMode>('live', 'read_only')), { maxLength: 3 })
    .map((entries) => new Map(entries.map(([name, mode]) => [name, { mode }]))),
  bundleEntries: fc.option(
    fc.array(fc.string({ maxLength: 12 }), { maxLength: 4 }).map((entries) => new Set(entries)),
    { nil: null },
  ),
  activeManifest: fc.constantFrom(null, ACTIVE_EXAMPLE),
  strict: fc.boolean(),
  allowContractChanges: fc.array(fc.oneof(fc.constantFrom('a', 'b'), fc.string({ maxLength: 6 })), { maxLength: 4 }),
});

const awkwardKey = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'version', 'assets', 'key', 'deps', 'schema'),
);

/** Anything JavaScript can hold, including prototype-less objects, boxed values and odd keys. */
const anyValue = fc.anything({
  key: awkwardKey,
  maxDepth: 4,
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withNullPrototype: true,
  withObjectString: true,
  withSet: true,
  withSparseArray: true,
  withTypedArray: true,
  withUnicodeString: true,
});

const anyColumn = fc.record(
  {
    name: fc.constantFrom('id', 'x', ''),
    type: fc.oneof(fc.constantFrom(...ColumnType.options), fc.string()),
    nullable: fc.jsonValue(),
  },
  { requiredKeys: ['name', 'type'] },
);

/** Objects that look like manifests, so that the checks below the top level are reached. */
const manifestLike = fc.record(
  {
    version: fc.oneof(fc.constant(1), fc.jsonValue()),
    assets: fc.oneof(
      fc.array(
        fc.record(
          {
            key: fc.oneof(fc.constantFrom('a', 'b', 'c'), resourceName, fc.jsonValue()),
            binding: fc.oneof(fc.constantFrom('warehouse', 'x'), fc.jsonValue()),
            entry: fc.oneof(fc.constantFrom('a.js', 'b.js', '../x', '/x', 'a\\b'), fc.string()),
            deps: fc.oneof(fc.array(fc.constantFrom('a', 'b', 'c', 'd')), fc.jsonValue()),
            schema: fc.oneof(
              fc.record({ columns: fc.array(anyColumn) }),
              fc.jsonValue(),
            ),
            [`__proto__`]: fc.jsonValue(),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 6 },
      ),
      fc.jsonValue(),
    ),
    jobs: fc.array(
      fc.record({ name: fc.constantFrom('j', 'k'), assets: fc.array(fc.constantFrom('a', 'b', 'z')) }, { requiredKeys: [] }),
      { maxLength: 3 },
    ),
    schedules: fc.array(
      fc.record(
        {
          name: fc.constantFrom('s', 't'),
          job: fc.constantFrom('j', 'k', 'z'),
          cron: fc.oneof(fc.constantFrom(...VALID_CRONS), fc.string()),
          timezone: fc.oneof(fc.constantFrom(...ZONES), fc.string()),
        },
        { requiredKeys: [] },
      ),
      { maxLength: 3 },
    ),
    extra: fc.jsonValue(),
  },
  { requiredKeys: [] },
);

/**
 * A well-formed scenario with its references scrambled: deps that are unknown, repeated,
 * circular or self-referencing, duplicated asset keys and unknown bindings. The shape
 * stays valid, so every semantic check runs.
 */
const scrambledScenario: fc.Arbitrary<Scenario> = wellFormedScenario.chain((scenario) => {
  const keys = scenario.manifest.assets.map((asset) => asset.key as string);
  const keyPool = fc.constantFrom(...keys, 'ghost', 'x');
  const bindingPool = fc.constantFrom(...scenario.bindings.keys(), 'nope');
  const assetCount = keys.length;
  return fc
    .tuple(
      fc.array(fc.array(keyPool, { maxLength: 4 }), { minLength: assetCount, maxLength: assetCount }),
      fc.array(fc.option(keyPool, { nil: undefined }), { minLength: assetCount, maxLength: assetCount }),
      fc.array(bindingPool, { minLength: assetCount, maxLength: assetCount }),
    )
    .map(([deps, renamedKeys, bindings]) => ({
      ...scenario,
      manifest: {
        ...scenario.manifest,
        assets: scenario.manifest.assets.map((asset, index) => ({
          ...asset,
          key: renamedKeys[index] ?? asset.key,
          deps: deps[index],
          binding: bindings[index],
        })),
      },
    }));
});

const errorCodes = new Set<string>(ValidationErrorCode.options);
const warningCodes = new Set<string>(ValidationWarningCode.options);

function expectWellFormedResult(result: ReturnType<typeof validateManifest>): void {
  expect(Array.isArray(result.errors)).toBe(true);
  expect(Array.isArray(result.warnings)).toBe(true);
  expect(Array.isArray(result.changedAssets)).toBe(true);
  for (const issue of result.errors) {
    expect(errorCodes.has(issue.code)).toBe(true);
    expect(typeof issue.path).toBe('string');
    expect(issue.message.length).toBeGreaterThan(0);
  }
  for (const issue of result.warnings) expect(warningCodes.has(issue.code)).toBe(true);
  // The manifest is returned exactly when its shape is valid.
  expect(result.manifest === null).toBe(result.errors.some((issue) => issue.code === 'manifest_invalid'));
}

// ---- properties -------------------------------------------------------------------------

describe('validateManifest never throws', () => {
  it('for anything as the manifest', () => {
    fc.assert(
      fc.property(anyValue, anyContext, (manifest, context) => {
        expectWellFormedResult(validateManifest(manifest, context));
      }),
      { numRuns: 300 },
    );
  });

  it('for any JSON value as the manifest', () => {
    fc.assert(
      fc.property(fc.jsonValue(), anyContext, (manifest, context) => {
        expectWellFormedResult(validateManifest(manifest, context));
      }),
      { numRuns: 300 },
    );
  });

  it('for objects that look like manifests', () => {
    fc.assert(
      fc.property(manifestLike, anyContext, (manifest, context) => {
        expectWellFormedResult(validateManifest(manifest, context));
      }),
      { numRuns: 300 },
    );
  });
});

describe('validateManifest on scrambled references', () => {
  it('never throws, parses the shape and is deterministic', () => {
    fc.assert(
      fc.property(scrambledScenario, anyContext, fc.boolean(), (scenario, context, ownBundle) => {
        const withBundle = ownBundle
          ? { ...context, bundleEntries: scenario.bundleEntries, bindings: scenario.bindings }
          : context;
        const result = validateManifest(scenario.manifest, withBundle);
        expectWellFormedResult(result);
        expect(result.manifest).not.toBeNull();
        expect(validateManifest(scenario.manifest, withBundle)).toEqual(result);
      }),
      { numRuns: 300 },
    );
  });
});

describe('validateManifest is deterministic', () => {
  it('gives the same answer twice for the same input', () => {
    fc.assert(
      fc.property(fc.oneof(anyValue, manifestLike), anyContext, (manifest, context) => {
        expect(validateManifest(manifest, context)).toEqual(validateManifest(manifest, context));
      }),
      { numRuns: 200 },
    );
  });

  it('gives the same answer for a copy of the input', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), manifestLike), anyContext, (manifest, context) => {
        const copy: unknown = JSON.parse(JSON.stringify(manifest));
        expect(validateManifest(copy, context)).toEqual(validateManifest(manifest, context));
      }),
      { numRuns: 200 },
    );
  });
});

describe('validateManifest on well-formed manifests', () => {
  it('reports no error, strict or not, with or without the same manifest active', () => {
    fc.assert(
      fc.property(wellFormedScenario, fc.boolean(), fc.boolean(), (scenario, strict, sameActive) => {
        const activeManifest = sameActive ? ManifestV1.parse(scenario.manifest) : null;
        const result = validateManifest(scenario.manifest, contextFor(scenario, { strict, activeManifest }));
        expect(result.errors).toEqual([]);
        expect(result.changedAssets).toEqual([]);
        expect(result.manifest).not.toBeNull();
      }),
    );
  });

  it('reports no error when exactly the changed assets are allowed, and names them in order', () => {
    const scenarioWithChanges = wellFormedScenario.chain((scenario) =>
      fc.tuple(fc.constant(scenario), fc.subarray(scenario.manifest.assets.map((asset) => asset.key as string))),
    );
    fc.assert(
      fc.property(scenarioWithChanges, fc.boolean(), ([scenario, changedKeys], strict) => {
        // The active deployment declared one more column on each asset that changes.
        const active = ManifestV1.parse(scenario.manifest);
        for (const asset of active.assets) {
          if (!changedKeys.includes(asset.key)) continue;
          asset.schema = { columns: [...(asset.schema?.columns ?? []), { name: 'Added', type: 'string', nullable: false }] };
        }
        const result = validateManifest(
          scenario.manifest,
          contextFor(scenario, { strict, activeManifest: active, allowContractChanges: changedKeys }),
        );
        expect(result.errors).toEqual([]);
        expect(result.changedAssets).toEqual(changedKeys);
        const changeWarnings = result.warnings.filter((warning) => warning.code === 'contract_changed');
        expect(changeWarnings).toHaveLength(strict ? 0 : changedKeys.length);
      }),
    );
  });
});

describe('validateManifest finds a cycle', () => {
  it('when the first asset of a chain depends on the last', () => {
    const chain = fc.uniqueArray(resourceName, { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(chain, (keys) => {
        const assets = keys.map((key, index) => ({
          key,
          binding: 'warehouse',
          entry: `assets/${key}.js`,
          deps: index === 0 ? [keys[keys.length - 1]!] : [keys[index - 1]!],
        }));
        const context: ValidationContext = {
          bindings: new Map([['warehouse', { mode: 'live' }]]),
          bundleEntries: new Set(assets.map((asset) => asset.entry)),
          activeManifest: null,
          strict: false,
          allowContractChanges: [],
        };
        const result = validateManifest({ version: 1, assets }, context);
        expect(result.errors.map((error) => error.code)).toEqual(['dependency_cycle']);
        expect(result.errors[0]!.message).toContain(`${JSON.stringify(keys[0]).slice(1, -1)} -> `);
      }),
    );
  });
});

describe('cronExpressionProblem on generated expressions', () => {
  /** A valid list item for a field with values min..max. */
  const item = (min: number, max: number) => {
    const step = fc.integer({ min: 1, max: max - min + 1 });
    return fc.oneof(
      fc.constant('*'),
      step.map((size) => `*/${size}`),
      fc.integer({ min, max }).map(String),
      fc
        .tuple(fc.integer({ min, max }), fc.integer({ min, max }), fc.option(step, { nil: undefined }))
        .map(([a, b, size]) => `${Math.min(a, b)}-${Math.max(a, b)}${size === undefined ? '' : `/${size}`}`),
    );
  };
  const field = (min: number, max: number) =>
    fc.array(item(min, max), { minLength: 1, maxLength: 3 }).map((items) => items.join(','));

  it('accepts every well-formed five-field expression', () => {
    fc.assert(
      fc.property(fc.tuple(field(0, 59), field(0, 23), field(1, 31), field(1, 12), field(0, 7)), (fields) => {
        expect(cronExpressionProblem(fields.join(' '))).toBeNull();
      }),
    );
  });

  it('never throws and answers null or a reason for any string', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (expression) => {
        const problem = cronExpressionProblem(expression);
        expect(problem === null || problem.length > 0).toBe(true);
      }),
    );
  });
});

describe('validateManifest on sparse arrays (a counterexample fast-check found)', () => {
  it('reports the holes of assets, jobs and schedules as errors, never throws', () => {
    const result = validateManifest({ version: 1, assets: [, { key: 'a', binding: 'b', entry: 'a.js', deps: [] }], jobs: [,], schedules: [,] }, {
      bindings: new Map(),
      bundleEntries: null,
      activeManifest: null,
      strict: false,
      allowContractChanges: [],
    });
    expectWellFormedResult(result);
    expect(result.errors.length).toBeGreaterThan(0);
  });
});
