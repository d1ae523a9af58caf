export * from './replica-pools.ts';
