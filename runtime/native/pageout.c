/*
 * pageOutExecutable() -> number: asks the kernel to reclaim the pages of the running executable's
 * read-only file mappings (madvise MADV_PAGEOUT, Linux 5.4+), returning the bytes advised, or -1
 * when it cannot (no /proc, an older kernel).
 *
 * Why: most of an idle `mur serve` process's resident memory that is not its own heap is the Node
 * binary's code and read-only data (≈ 57 of ≈ 100 MiB VmRSS in the quickstart pod), paged in at
 * start and by the first tasks, then untouched while the pod sleeps-in-place waiting for work. The
 * kernel keeps them until memory runs short, and they count in the pod's RSS all along. Paged out
 * when the process goes idle (runtime/memory.ts), the few the idle process still runs (timers, the
 * event loop) fault back in within seconds, the rest when the next task runs them. The kernel skips
 * pages another process also maps (every capsule pod of one image on a node maps the same file):
 * those stay, shared, and cost this process nothing extra. Clean file pages are dropped, not written
 * anywhere; nothing of the process's state changes.
 */
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static napi_value PageOutExecutable(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  FILE *maps = n > 0 ? fopen("/proc/self/maps", "re") : NULL;
  if (!maps) {
    napi_create_double(env, -1, &result);
    return result;
  }
  exe[n] = '\0';
  double advised = 0;
  int failed = 0;
  char line[4096 + 256];
  while (fgets(line, sizeof line, maps)) {
    unsigned long start, end;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) < 3 || path_at == 0) continue;
    char *path = line + path_at;
    path[strcspn(path, "\n")] = '\0';
    if (strcmp(path, exe) != 0 || strchr(perms, 'w') != NULL) continue;
    if (madvise((void *)start, end - start, MADV_PAGEOUT) == 0) advised += (double)(end - start);
    else failed = 1;
  }
  fclose(maps);
  napi_create_double(env, failed && advised == 0 ? -1 : advised, &result);
  return result;
}

int pageout_exports(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "pageOutExecutable", NAPI_AUTO_LENGTH, PageOutExecutable, NULL, &fn) != napi_ok) return -1;
  if (napi_set_named_property(env, exports, "pageOutExecutable", fn) != napi_ok) return -1;
  return 0;
}
