export * from './services.ts';
export * from './backing.ts';
export * from './service-processes.ts';
export * from './dev-token.ts';
export * from './stack.ts';
export * from './secrets-master-key.ts';
export * from './supervisor.ts';
export * from './stack-supervision.ts';
