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
 * mapFile(path) -> ArrayBuffer | null: a file's pages mapped in place of a copy read onto the heap.
 * A copy is private memory of each process; the mapped pages are the page cache's, shared by every
 * process that maps the file (the capsules of one image on a node map the image's token tables,
 * bpe-table-file.ts) and dropped by the kernel under pressure. MAP_PRIVATE and writable: a write
 * by mistake makes a private copy of that page, never changes the file and never faults. The
 * buffer unmaps when V8 collects it. Null when the file cannot be opened or mapped (the caller
 * reads it instead, and says why). A file truncated under a mapping faults its reader (SIGBUS):
 * the files mapped here are only ever replaced whole (written beside, renamed into place).
 *
 * unresidentMapped() -> number: every mapping mapFile made and V8 has not collected yet leaves
 * this process's resident set (madvise MADV_DONTNEED): its pages stay in the page cache and come
 * back, from there, on the next read (a minor fault each). A mapped file only this process maps is
 * Private_Clean memory of it as long as its pages are resident: the token tables, 3.9 MiB, once
 * the other capsules of the image on a node have let theirs go (runtime/memory.ts: the settle).
 * Only mapFile's own mappings, each read-only in use: on anonymous or written memory the advice
 * would discard data. Returns the bytes advised.
 *
 * Exports: trim() -> boolean (true when memory was returned), mapFile, what guard.c adds (scrub,
 * nonDumpable: the runtime's secrets kept out of /proc/<pid>/environ, cmdline and mem) and caps.c
 * (dropCapabilities: no child can hold a capability that reads them) and exe.c
 * (unresidentExecutable: the Node binary's pages out of an idle process's resident set). Built from
 * the four files by scripts/build-native.ts with the C compiler against the running Node's own headers
 * (Node-API, ABI-stable: one build loads on Node 20 and 24).
 */
#include <fcntl.h>
#include <malloc.h>
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int guard_exports(napi_env env, napi_value exports);
int caps_exports(napi_env env, napi_value exports);
int exe_exports(napi_env env, napi_value exports);

static napi_value Trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  napi_get_boolean(env, malloc_trim(0) == 1, &result);
  return result;
}

/* mapFile's live mappings (the main thread's and any worker's: one lock for all), for unresidentMapped. */
#define MAX_MAPPED 16
static struct {
  void *p;
  size_t size;
} mapped[MAX_MAPPED];
static pthread_mutex_t mapped_lock = PTHREAD_MUTEX_INITIALIZER;

static void Remember(void *p, size_t size) {
  pthread_mutex_lock(&mapped_lock);
  for (int i = 0; i < MAX_MAPPED; i++) {
    if (mapped[i].p == NULL) {
      mapped[i].p = p;
      mapped[i].size = size;
      break;
    }
  }
  /* More than MAX_MAPPED at once: the rest stay resident until collected; nothing else changes. */
  pthread_mutex_unlock(&mapped_lock);
}

static void Unmap(napi_env env, void *data, void *hint) {
  (void)env;
  pthread_mutex_lock(&mapped_lock);
  for (int i = 0; i < MAX_MAPPED; i++)
    if (mapped[i].p == data) mapped[i].p = NULL;
  munmap(data, (size_t)(uintptr_t)hint);
  pthread_mutex_unlock(&mapped_lock);
}

static napi_value UnresidentMapped(napi_env env, napi_callback_info info) {
  (void)info;
  double advised = 0;
  pthread_mutex_lock(&mapped_lock);
  for (int i = 0; i < MAX_MAPPED; i++)
    if (mapped[i].p != NULL && madvise(mapped[i].p, mapped[i].size, MADV_DONTNEED) == 0) advised += (double)mapped[i].size;
  pthread_mutex_unlock(&mapped_lock);
  napi_value result;
  napi_create_double(env, advised, &result);
  return result;
}

static napi_value MapFile(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  char path[4096];
  size_t len = 0;
  napi_get_null(env, &result);
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return result;
  if (napi_get_value_string_utf8(env, argv[0], path, sizeof path, &len) != napi_ok || len >= sizeof path - 1) return result;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return result;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    close(fd);
    return result;
  }
  size_t size = (size_t)st.st_size;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return result;
  napi_value ab;
  if (napi_create_external_arraybuffer(env, p, size, Unmap, (void *)(uintptr_t)size, &ab) != napi_ok) {
    munmap(p, size);
    return result;
  }
  Remember(p, size);
  return ab;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "mapFile", NAPI_AUTO_LENGTH, MapFile, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "mapFile", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "unresidentMapped", NAPI_AUTO_LENGTH, UnresidentMapped, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "unresidentMapped", fn) != napi_ok) return NULL;
  if (guard_exports(env, exports) != 0) return NULL;
  if (caps_exports(env, exports) != 0) return NULL;
  if (exe_exports(env, exports) != 0) return NULL;
  return exports;
}
