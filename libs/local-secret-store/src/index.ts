export * from './master-keyring.ts';
export * from './envelope-crypto.ts';
export * from './local-secret-store.ts';
