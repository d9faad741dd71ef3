export * from './capsule.ts';
export * from './artifact.ts';
export { MurErrorList, isMurErrorList } from './errors.ts';
export { CAPSULE_SCHEMA, ARTIFACT_SCHEMA, ARTIFACT_RUNTIMES, type ArtifactRuntime, type FieldSpec, type FieldType } from './schema.ts';
export { parseNetworkEntry, networkCovers, scopeCovers, type NetworkEntry } from './checks.ts';
