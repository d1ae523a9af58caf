export * from './token-codec.ts';
export * from './token.repository.ts';
