export * from './attempt-queues.ts';
export * from './pool-acl.ts';
export * from './pool-connection.ts';
