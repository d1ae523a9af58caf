export * from './engine-metrics.ts';
export * from './http-metrics.ts';
export * from './route-template.ts';
