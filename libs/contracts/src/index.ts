export * from './errors.ts';
export * from './envelope.ts';
export * from './names.ts';
export * from './environment.ts';
export * from './internal-headers.ts';
export * from './health.ts';
export * from './secrets.ts';
export * from './bindings.ts';
