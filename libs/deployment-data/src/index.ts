export * from './bundles/bundle.repository.ts';
export * from './bundles/bundle-reader.ts';
export * from './deployments/deployment.repository.ts';
export * from './materializations/materialization.repository.ts';
