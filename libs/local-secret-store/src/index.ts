export * from './local-secret-store.ts';
