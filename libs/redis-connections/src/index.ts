export * from './redis-connections.ts';
