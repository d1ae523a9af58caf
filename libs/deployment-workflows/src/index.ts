export * from './definitions.ts';
export * from './activation-signals.ts';
