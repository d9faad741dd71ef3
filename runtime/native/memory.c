/*
 * memory.node: hands memory the process has freed back to the kernel (glibc's malloc_trim).
 *
 * Why a native addon: glibc keeps what a process frees in its arenas, and returns only the top of
 * each heap; the middle stays resident until malloc_trim(), which Node does not expose and no npm
 * package offers without a build toolchain of its own. Measured on the runtime image (Node 24),
 * `mur serve` idle 45 s after one task: RSS 99.7 MiB, 92.0 after malloc_trim(0) (the main arena
 * 9.6 -> 5.8 MiB, the second arena, where the ended component thread's allocations were, 5.0 MiB
 * with 0.2 in use). See runtime/memory.ts for when the runtime calls it.
 *
 * Exports: trim() -> boolean (true when memory was returned), what guard.c adds (scrub,
 * nonDumpable: the runtime's secrets kept out of /proc/<pid>/environ, cmdline and mem) and caps.c
 * (dropCapabilities: no child can hold a capability that reads them). Built from
 * the three files by scripts/build-native.ts with the C compiler against the running Node's own headers
 * (Node-API, ABI-stable: one build loads on Node 20 and 24).
 */
#include <malloc.h>
#include <node_api.h>

int guard_exports(napi_env env, napi_value exports);
int caps_exports(napi_env env, napi_value exports);

static napi_value Trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  napi_get_boolean(env, malloc_trim(0) == 1, &result);
  return result;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  if (guard_exports(env, exports) != 0) return NULL;
  if (caps_exports(env, exports) != 0) return NULL;
  return exports;
}
