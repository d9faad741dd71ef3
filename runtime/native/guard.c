/*
 * The process-guard half of memory.node: keeps the runtime's secrets out of what other processes
 * can read of it (runtime/process-guard.ts says when it is called).
 *
 * Why native: the kernel shows a process's start-up arguments and environment
 * (/proc/<pid>/cmdline, /proc/<pid>/environ) from the original memory at the top of its stack
 * (mm->arg_start..arg_end, env_start..env_end). Deleting a variable from process.env (unsetenv)
 * only drops glibc's pointer to it; the bytes stay, and /proc/<pid>/environ goes on showing them to
 * every process of the same user (and to root, whatever the process's dumpable mark). Only
 * overwriting those bytes removes them, and Node offers no way to write to that memory.
 *
 * Exports:
 *   scrub(values: string[]) -> number: overwrites every occurrence of each value in the argument
 *     and environment blocks with '*' (same length, so the blocks keep their layout); returns how
 *     many it overwrote, or -1 when the blocks' addresses cannot be read (/proc/self/stat, Linux
 *     >= 3.5). The caller first copies any environment variable whose value it still needs off the
 *     block (glibc's setenv makes a copy): getenv reads the same bytes.
 *   nonDumpable() -> boolean: prctl(PR_SET_DUMPABLE, 0). The kernel then makes /proc/<pid>/environ,
 *     mem, fd/, maps … root's, so a process of the same non-root user can read none of them and
 *     cannot ptrace the runtime; exec of a child resets the mark, so children are unaffected.
 */
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

/* Fields 48-51 of /proc/self/stat (proc(5)): arg_start, arg_end, env_start, env_end. */
static int blocks(unsigned long out[4]) {
  char buf[4096];
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  /* The command name (field 2) may hold spaces and parentheses: count fields after the last ')'. */
  char *p = strrchr(buf, ')');
  if (!p) return -1;
  int field = 2;
  for (char *tok = strtok(p + 1, " \n"); tok; tok = strtok(NULL, " \n")) {
    field++;
    if (field >= 48 && field <= 51) out[field - 48] = strtoul(tok, NULL, 10);
  }
  return field >= 51 ? 0 : -1;
}

static int overwrite(char *start, char *end, const char *value, size_t len) {
  int count = 0;
  for (char *p = start; len > 0 && p + len <= end; p++) {
    if (memcmp(p, value, len) == 0) {
      memset(p, '*', len);
      p += len - 1;
      count++;
    }
  }
  return count;
}

static napi_value Scrub(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  uint32_t length = 0;
  unsigned long b[4];
  int count = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_array_length(env, argv[0], &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "scrub(values: string[])");
    return NULL;
  }
  if (blocks(b) != 0 || b[1] < b[0] || b[3] < b[2]) {
    napi_create_int32(env, -1, &result);
    return result;
  }
  for (uint32_t i = 0; i < length; i++) {
    napi_value item;
    size_t len = 0;
    if (napi_get_element(env, argv[0], i, &item) != napi_ok || napi_get_value_string_utf8(env, item, NULL, 0, &len) != napi_ok || len == 0) continue;
    char *value = malloc(len + 1);
    if (!value) continue;
    napi_get_value_string_utf8(env, item, value, len + 1, &len);
    count += overwrite((char *)b[0], (char *)b[1], value, len);
    count += overwrite((char *)b[2], (char *)b[3], value, len);
    memset(value, 0, len);
    free(value);
  }
  napi_create_int32(env, count, &result);
  return result;
}

static napi_value NonDumpable(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  napi_get_boolean(env, prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0, &result);
  return result;
}

/* Called from memory.c's module init: one addon, one file per concern. */
int guard_exports(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "scrub", NAPI_AUTO_LENGTH, Scrub, NULL, &fn) != napi_ok) return -1;
  if (napi_set_named_property(env, exports, "scrub", fn) != napi_ok) return -1;
  if (napi_create_function(env, "nonDumpable", NAPI_AUTO_LENGTH, NonDumpable, NULL, &fn) != napi_ok) return -1;
  if (napi_set_named_property(env, exports, "nonDumpable", fn) != napi_ok) return -1;
  return 0;
}
