/*
 * The capability half of memory.node's process guard: no process the runtime starts can hold a
 * capability that reads the runtime's memory (runtime/process-guard.ts says when it is called).
 *
 * Why: a non-dumpable process (guard.c) can still be read through /proc/<pid>/mem, ptrace and
 * process_vm_readv by a caller holding CAP_SYS_PTRACE (the kernel's ptrace_may_access: the same
 * uid is not enough). A runtime run as root starts its shell tools as root, and root's exec gets
 * every capability of its bounding set. Taking these out of the bounding set (and out of the
 * runtime's own inheritable, permitted, effective and ambient sets: it needs none of them) means
 * no descendant can ever hold them again, whatever it executes (setuid-root programs included):
 *   CAP_SYS_PTRACE  /proc/<pid>/mem, environ, maps; ptrace; process_vm_readv
 *   CAP_SYS_RAWIO   /proc/kcore, /dev/mem (all of physical memory)
 *   CAP_SYS_MODULE  a kernel module, which reads any memory
 * A shell tool loses nothing it legitimately does with them: it can still strace, gdb and read
 * /proc of its own children (same uid, dumpable, no more capabilities than it has).
 *
 * Capabilities and the bounding set belong to each thread, not to the process, and Node has
 * started threads before any JavaScript runs (and tsx its loader thread): whichever thread calls
 * child_process.spawn gives the child its own sets. So the drop runs on the calling thread, then
 * on every other thread through a signal whose handler does the same system calls (what glibc does
 * for setuid across threads). A thread that blocks the signal is left as it is: Node has one, the
 * inspector's SIGUSR1 watchdog, which blocks every signal and only ever waits on a semaphore.
 * Threads started later copy the sets of the thread that starts them.
 *
 * Raw system calls against <linux/capability.h>: no libcap dependency.
 *
 * Exports:
 *   dropCapabilities() -> string: '' when every thread reached holds none of the three in any set;
 *     else what failed (e.g. "PR_CAPBSET_DROP: Operation not permitted": the bounding set needs
 *     CAP_SETPCAP, which a non-root user or a container without it lacks). Safe to call more than once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <linux/capability.h>
#include <node_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const int DROPPED[] = {CAP_SYS_PTRACE, CAP_SYS_RAWIO, CAP_SYS_MODULE};
#define NDROPPED (sizeof DROPPED / sizeof DROPPED[0])

/* The step that failed first on the calling thread (0: none) and its errno. Async-signal-safe. */
enum step { OK, BOUNDING, CAPGET, CAPSET, AMBIENT };

static enum step drop_here(int *err) {
  enum step failed = OK;
  /* EINVAL: a kernel that does not know the capability (none is that old) or ambient sets (< 4.3). */
  for (size_t i = 0; i < NDROPPED; i++) {
    if (prctl(PR_CAPBSET_DROP, DROPPED[i], 0, 0, 0) != 0 && errno != EINVAL && failed == OK) failed = BOUNDING, *err = errno;
  }
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  if (syscall(SYS_capget, &hdr, data) != 0) {
    if (failed == OK) failed = CAPGET, *err = errno;
  } else {
    for (size_t i = 0; i < NDROPPED; i++) {
      __u32 bit = CAP_TO_MASK(DROPPED[i]);
      int word = CAP_TO_INDEX(DROPPED[i]);
      data[word].inheritable &= ~bit;
      data[word].permitted &= ~bit;
      data[word].effective &= ~bit;
    }
    /* Lowering every set needs no privilege. Clearing inheritable also empties them from ambient. */
    if (syscall(SYS_capset, &hdr, data) != 0 && failed == OK) failed = CAPSET, *err = errno;
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL && failed == OK) failed = AMBIENT, *err = errno;
  return failed;
}

static volatile int answered, others_failed;

static void on_signal(int sig) {
  (void)sig;
  int saved = errno, err = 0;
  if (drop_here(&err) != OK) __atomic_add_fetch(&others_failed, 1, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&answered, 1, __ATOMIC_SEQ_CST);
  errno = saved;
}

/* Whether thread tid blocks signal sig (its SigBlk mask in /proc/self/task/<tid>/status). */
static int blocks(const char *tid, int sig) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  unsigned long long mask = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "SigBlk:", 7) == 0) mask = strtoull(line + 7, NULL, 16);
  }
  fclose(f);
  return (mask >> (sig - 1)) & 1;
}

/* Runs drop_here on every other thread that takes the signal; returns how many failed or did not answer. */
static int drop_on_other_threads(void) {
  int sig = SIGRTMAX - 3; /* unused by Node, libuv and V8 */
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, &old) != 0) return -1;
  answered = others_failed = 0;
  int sent = 0;
  pid_t pid = getpid(), self = (pid_t)syscall(SYS_gettid);
  DIR *d = opendir("/proc/self/task");
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      pid_t tid = (pid_t)atoi(e->d_name);
      if (tid <= 0 || tid == self || blocks(e->d_name, sig)) continue;
      if (syscall(SYS_tgkill, pid, tid, sig) == 0) sent++;
    }
    closedir(d);
  }
  /* Each handler runs within microseconds; a thread that exits meanwhile never answers: 2 s at most. */
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < 2000 && __atomic_load_n(&answered, __ATOMIC_SEQ_CST) < sent; i++) nanosleep(&ms, NULL);
  int missing = sent - __atomic_load_n(&answered, __ATOMIC_SEQ_CST);
  /* A late handler must still find its function: the disposition is restored only once all answered. */
  if (missing == 0) sigaction(sig, &old, NULL);
  return missing + __atomic_load_n(&others_failed, __ATOMIC_SEQ_CST);
}

static napi_value DropCapabilities(napi_env env, napi_callback_info info) {
  (void)info;
  static const char *names[] = {"", "PR_CAPBSET_DROP", "capget", "capset", "PR_CAP_AMBIENT_CLEAR_ALL"};
  char message[160] = "";
  int err = 0;
  enum step failed = drop_here(&err);
  int others = drop_on_other_threads();
  if (failed != OK) snprintf(message, sizeof message, "%s: %s", names[failed], strerror(err));
  else if (others < 0) snprintf(message, sizeof message, "sigaction: %s", strerror(errno));
  else if (others > 0) snprintf(message, sizeof message, "%d other thread(s) of this process did not drop them", others);
  napi_value result;
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &result);
  return result;
}

/* Called from memory.c's module init. */
int caps_exports(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "dropCapabilities", NAPI_AUTO_LENGTH, DropCapabilities, NULL, &fn) != napi_ok) return -1;
  return napi_set_named_property(env, exports, "dropCapabilities", fn) == napi_ok ? 0 : -1;
}
