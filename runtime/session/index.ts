export * from './id.ts';
export * from './workdir.ts';
export * from './stage.ts';
