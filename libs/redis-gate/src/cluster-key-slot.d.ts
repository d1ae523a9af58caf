// The package ioredis computes Redis Cluster slots with (CRC16 of the key or its hash tag, mod 16384); it ships no types.
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string | Buffer): number;
}
