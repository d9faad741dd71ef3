export * from './cache-key.ts';
export * from './capsule-block.ts';
export * from './usage.ts';
export * from './wire.ts';
export * from './continuation.ts';
export * from './tokens.ts';
export * from './spend.ts';
