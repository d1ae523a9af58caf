import { defineConfig } from 'vitest/config';
import { ProjectTimingsReporter } from './src/project-timings.reporter.ts';

/**
 * The e2e files by the stack they need (docs/development.md#tests):
 *
 * - `shared`: the suite's one stack (src/global-setup.ts). Each file makes tenants of its
 *   own, so files run side by side.
 * - `own-stack`: files that boot a stack of their own, because they kill, restart, pause or
 *   reconfigure its services (or run several replicas, another MongoDB, a Redis Cluster). Their
 *   stacks are apart from each other's, so these run side by side too.
 * - `measured`: files that time a victim tenant's work beside an attack and compare it with
 *   the same work measured quiet. Any other file beside them is load they did not make, so
 *   they run last, one at a time, with nothing else running.
 */
const MEASURED = [
  'src/fair-shares.int.test.ts',
  'src/gateway-fairness.int.test.ts',
  'src/pool-gate-bounds.int.test.ts',
  'src/runner-loop.int.test.ts',
  'src/schedule-burst.int.test.ts',
];
const OWN_STACK = [
  'src/backing-auth.int.test.ts',
  'src/bundle-retention.int.test.ts',
  'src/deployment-failures.int.test.ts',
  'src/dev-stack.int.test.ts',
  'src/environment-lifecycle.int.test.ts',
  'src/events.int.test.ts',
  'src/master-key-rotation.int.test.ts',
  'src/metrics.int.test.ts',
  'src/mongo-failover.int.test.ts',
  'src/mongo-restart.int.test.ts',
  'src/redis-cluster.int.test.ts',
  'src/replicas.int.test.ts',
  'src/run-failures.int.test.ts',
  'src/schedule-crash.int.test.ts',
  'src/schedule-migration.int.test.ts',
  'src/stack-supervision.int.test.ts',
  'src/temporal-cluster.int.test.ts',
  'src/traces.int.test.ts',
  'src/webhooks.int.test.ts',
];
/** Files at once in the first group, on two cores: most of a file's time is spent waiting on a server, a fire time or a lease. */
const SIDE_BY_SIDE = Number(process.env.E2E_FILES_AT_ONCE ?? 3);

export default defineConfig({
  test: {
    // One stack for every project (src/global-setup.ts boots it once and shares it).
    globalSetup: ['./src/global-setup.ts'],
    reporters: ['default', new ProjectTimingsReporter()],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // A worker process runs file after file with the modules it has loaded: each file
    // importing the harness, the clients and the drivers again cost 100 s of the shared
    // project's CPU (docs/development.md#how-long-npm-test-takes). No file mocks a module
    // or keeps state at module level that another file reads.
    isolate: false,
    projects: [
      {
        extends: true,
        test: { name: 'shared', include: ['src/**/*.int.test.ts'], exclude: [...MEASURED, ...OWN_STACK], maxWorkers: SIDE_BY_SIDE, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: 'own-stack', include: OWN_STACK, maxWorkers: SIDE_BY_SIDE, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: 'measured', include: MEASURED, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
