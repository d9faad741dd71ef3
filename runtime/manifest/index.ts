export * from './capsule.ts';
export * from './artifact.ts';
export { MurErrorList, isMurErrorList } from './errors.ts';
export {
  CAPSULE_SCHEMA,
  ARTIFACT_SCHEMA,
  ARTIFACT_RUNTIMES,
  DEFAULT_INPUT_TIMEOUT_SECS,
  MAX_MANIFEST_BYTES,
  MAX_SYSTEM_PROMPT_BYTES,
  type ArtifactRuntime,
  type FieldSpec,
  type FieldType,
} from './schema.ts';
export { parseNetworkEntry, networkCovers, scopeCovers, type NetworkEntry } from './checks.ts';
export { readBoundedFile, promptFileBound } from './bounded-file.ts';
