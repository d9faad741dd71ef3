export * from './result.ts';
export * from './data-path.ts';
export * from './redundancy.ts';
