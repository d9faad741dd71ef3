export * from './env.ts';
export * from './argv.ts';
export * from './resolve.ts';
export * from './recipe.ts';
export * from './identity.ts';
export * from './spawn.ts';
