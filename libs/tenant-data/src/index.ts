export * from './tenant-scoped-model.ts';
export * from './transactions.ts';
