// Runs before anything else in `mur` (plain JS, before tsx is registered): the provider key leaves
// process.env before any child process exists. tsx starts an esbuild child process to transform
// the TypeScript sources, and a child inherits the environment of the moment it starts; a leaked
// copy there would be readable through /proc/<esbuild pid>/environ by any tool of the same user.
// The values are parked for runtime/host/inference-key.ts, which reads the key file.
const PARKED = Symbol.for('murmur.inference-key');
const env = process.env;
globalThis[PARKED] = { file: env.MURMUR_INFERENCE_API_KEY_FILE, value: env.MURMUR_INFERENCE_API_KEY };
delete env.MURMUR_INFERENCE_API_KEY_FILE;
delete env.MURMUR_INFERENCE_API_KEY;
