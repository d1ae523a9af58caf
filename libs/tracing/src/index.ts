export * from './tracing.ts';
