/*
 * unresidentExecutable() -> number: the running executable's pages leave this process's resident
 * set (madvise MADV_DONTNEED on its read-only mappings that hold no page of their own); returns
 * the bytes that were resident in them, or -1 when it cannot read /proc/self/smaps.
 *
 * Why: most of an idle `mur serve` process's resident memory that is not its own heap is the Node
 * binary's code and read-only data (≈ 57 of ≈ 100 MiB VmRSS in the quickstart pod, measured on the
 * real node), paged in at start and by the first tasks, then unused while the pod waits for work.
 *
 * Why MADV_DONTNEED and not MADV_PAGEOUT: the kernel pages a file's pages out only for a process
 * that owns the file or may write it (the runtime is UID 65532, the binary root's), and never pages
 * out a page another process maps (every Node process of the images on a node maps the same
 * binary); tried and measured as a no-op in the pod (docs/measurements/memory.md). DONTNEED only
 * removes this process's page-table entries: the pages stay in the page cache, shared with whoever
 * else maps them, and what the process runs next faults them back from there (a minor fault maps
 * 16 pages around the one touched). Nothing of the file or of another process changes.
 *
 * Why only mappings without a page of their own: on a private file mapping a written page is this
 * process's copy (the relocated read-only-after-relocation data, `Anonymous:` in smaps); DONTNEED
 * would drop the copy and the next read would see the file's unrelocated bytes. So a mapping is
 * advised only when it is not writable and smaps counts no anonymous page in it. A mapping that is
 * not writable cannot gain a written page between the read and the advice. Dirty pages are not a
 * reason to keep one: a binary written moments before (an image root just unpacked) shows its
 * page-cache pages as Private_Dirty until they reach the disk, and they are the file's own bytes.
 */
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_RANGES 64

struct vma {
  unsigned long start, end;
  int candidate;        /* the executable's, not writable */
  unsigned long rss_kb; /* resident in this process */
  int own_pages;        /* Anonymous above 0: a page copied on write, this process's own */
};

static int value_kb(const char *line, const char *field, unsigned long *kb) {
  size_t n = strlen(field);
  return strncmp(line, field, n) == 0 && sscanf(line + n, " %lu", kb) == 1;
}

static napi_value UnresidentExecutable(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  FILE *smaps = n > 0 ? fopen("/proc/self/smaps", "re") : NULL;
  if (!smaps) {
    napi_create_double(env, -1, &result);
    return result;
  }
  exe[n] = '\0';
  struct vma ranges[MAX_RANGES];
  int count = 0;
  struct vma cur = {0};
  char line[4096 + 256];
  while (fgets(line, sizeof line, smaps)) {
    unsigned long start, end, kb;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) >= 3) {
      /* A mapping's header line: the one before it is complete. */
      if (cur.candidate && !cur.own_pages && cur.rss_kb > 0 && count < MAX_RANGES) ranges[count++] = cur;
      char *path = path_at > 0 ? line + path_at : "";
      path[strcspn(path, "\n")] = '\0';
      cur = (struct vma){start, end, path_at > 0 && strcmp(path, exe) == 0 && strchr(perms, 'w') == NULL, 0, 0};
    } else if (value_kb(line, "Rss:", &kb)) {
      cur.rss_kb = kb;
    } else if (value_kb(line, "Anonymous:", &kb) && kb > 0) {
      cur.own_pages = 1;
    }
  }
  if (cur.candidate && !cur.own_pages && cur.rss_kb > 0 && count < MAX_RANGES) ranges[count++] = cur;
  fclose(smaps);
  double released = 0;
  for (int i = 0; i < count; i++)
    if (madvise((void *)ranges[i].start, ranges[i].end - ranges[i].start, MADV_DONTNEED) == 0) released += (double)ranges[i].rss_kb * 1024;
  napi_create_double(env, released, &result);
  return result;
}

int exe_exports(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "unresidentExecutable", NAPI_AUTO_LENGTH, UnresidentExecutable, NULL, &fn) != napi_ok) return -1;
  if (napi_set_named_property(env, exports, "unresidentExecutable", fn) != napi_ok) return -1;
  return 0;
}
