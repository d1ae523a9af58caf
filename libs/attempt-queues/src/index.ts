export * from './attempt-queues.ts';
export * from './pool-acl.ts';
export * from './pool-connection.ts';
export * from './pool-gate-policy.ts';
export * from './pool-memory-budget.ts';
