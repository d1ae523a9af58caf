export * from './backing-server.ts';
export * from './binaries.ts';
export * from './managed-process.ts';
export * from './network.ts';
export * from './mongo-server.ts';
export * from './redis-server.ts';
export * from './temporal-server.ts';
export * from './mongod-wheel.ts';
