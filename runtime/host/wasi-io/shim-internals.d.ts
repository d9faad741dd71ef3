// preview2-shim's call table (dist/io/calls.js): not in the package's exports, so only the worker
// bundle reaches it (bundle.ts resolves the path); typed here as what it is, named numbers.
declare module '@bytecodealliance/preview2-shim/dist/io/calls.js' {
  const calls: Record<string, number>;
  export = calls;
}
