/*
 * setThreadSlice(ns) -> number: the calling thread's EEVDF time slice (sched_setattr with
 * sched_runtime, Linux 6.12 and later), its policy and nice value kept. Returns the slice the
 * kernel now holds for the thread in nanoseconds (clamped by the kernel to 0.1–100 ms; a kernel
 * without custom slices answers 0), or -errno when the kernel refused, or -EOPNOTSUPP for a thread
 * that is not under the fair scheduler (real-time, deadline, idle: left as it is).
 * setThreadSlice(0) gives the thread the kernel's default slice back.
 *
 * Why: a serving process's threads work in short bursts (a request, a hand-off to the component
 * thread and back), each woken by the one before. On a busy node a woken thread with the default
 * slice (0.7 ms scaled by the CPU count) waits behind whatever holds the CPU; with a shorter slice
 * its virtual deadline is earlier, so EEVDF runs it first and may preempt the running task at the
 * wake-up (the kernel's PREEMPT_SHORT). The share of CPU the thread gets does not change, only how
 * soon it gets it. No privilege is needed for a fair-class thread's own slice.
 *
 * SCHED_RESET_ON_FORK is set with it: a thread or process the caller starts afterwards begins with
 * the kernel's default (a shell tool's processes, the transpiler's child, V8's and libuv's helper
 * threads), so only the threads that ask for a slice have one (runtime/thread-slice.ts). An
 * unprivileged thread cannot clear that flag again, so it stays set, also by setThreadSlice(0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <node_api.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's struct sched_attr (include/uapi/linux/sched/types.h), SCHED_ATTR_SIZE_VER1: glibc
 * declares neither it nor the calls before 2.41. */
struct mur_sched_attr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

#define MUR_SCHED_OTHER 0
#define MUR_SCHED_BATCH 3
#define MUR_SCHED_FLAG_RESET_ON_FORK 0x01

static int64_t set_slice(uint64_t ns) {
  struct mur_sched_attr a;
  memset(&a, 0, sizeof a);
  if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) != 0) return -errno;
  if (a.sched_policy != MUR_SCHED_OTHER && a.sched_policy != MUR_SCHED_BATCH) return -EOPNOTSUPP;
  a.size = sizeof a;
  /* Policy and nice as they are: no privilege is asked for. Utilization clamps are not touched
   * (no SCHED_FLAG_UTIL_CLAMP). */
  a.sched_flags = MUR_SCHED_FLAG_RESET_ON_FORK;
  a.sched_runtime = ns;
  if (syscall(SYS_sched_setattr, 0, &a, 0) != 0) return -errno;
  struct mur_sched_attr now;
  memset(&now, 0, sizeof now);
  if (syscall(SYS_sched_getattr, 0, &now, (unsigned)sizeof now, 0) != 0) return -errno;
  return (int64_t)now.sched_runtime;
}

static napi_value SetThreadSlice(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_value result;
  double ns = -1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_double(env, argv[0], &ns) != napi_ok || !(ns >= 0)) {
    napi_create_double(env, -EINVAL, &result);
    return result;
  }
  napi_create_double(env, (double)set_slice((uint64_t)ns), &result);
  return result;
}

int sched_exports(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "setThreadSlice", NAPI_AUTO_LENGTH, SetThreadSlice, NULL, &fn) != napi_ok) return -1;
  if (napi_set_named_property(env, exports, "setThreadSlice", fn) != napi_ok) return -1;
  return 0;
}
