export * from './internal-http-client.ts';
export * from './placement-client.ts';
export * from './secrets-client.ts';
export * from './deployment-client.ts';
