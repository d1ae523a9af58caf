export * from './api-client.ts';
export * from './test-stack.ts';
export * from './tenants.ts';
export * from './leak-scans.ts';
export * from './secret-resolution.ts';
export * from './bundles.ts';
export * from './materializations.ts';
export * from './until.ts';
