export * from './master-keyring.ts';
export * from './envelope-crypto.ts';
