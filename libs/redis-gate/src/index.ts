export * from './resp.ts';
export * from './redis-gate.ts';
