export * from './id.ts';
export * from './workdir.ts';
export * from './stage.ts';
export * from './artifact-manager.ts';
