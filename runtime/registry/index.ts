export * from './registry.ts';
export * from './lock.ts';
export * from '../contracts/digest.ts';
export { resolveRemote, fetchBytes, unpackRemote, readTar, remoteCacheDir, REMOTE_VERSION_DEFAULT } from './remote.ts';
