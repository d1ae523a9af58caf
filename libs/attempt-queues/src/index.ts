export * from './attempt-queues.ts';
export * from './pool-acl.ts';
