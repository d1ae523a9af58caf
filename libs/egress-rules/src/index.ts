export * from './engine-network.ts';
