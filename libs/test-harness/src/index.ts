export * from './api-client.ts';
export * from './test-stack.ts';
export * from './tenants.ts';
