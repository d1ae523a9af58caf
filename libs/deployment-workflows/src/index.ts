export * from './definitions.ts';
export * from './activation-signals.ts';
export * from './lifecycle-signals.ts';
