export * from './tenant-scoped-model.ts';
export * from './transactions.ts';
export * from './insert-batcher.ts';
export * from './engine-fence.ts';
export * from './tenant-quotas.ts';
