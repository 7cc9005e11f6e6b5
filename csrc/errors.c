/*
** errors.c: kernel failures as `nil, message, errno`, with advice.
**
** Messages read "<what>: <strerror> (<ENAME>); <hint>". The errno is saved
** by the caller before any Lua API call (a Lua allocation may clobber it).
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "perf_core.h"

static const struct { int err; const char *name; } errnames[] = {
  {EPERM, "EPERM"}, {ENOENT, "ENOENT"}, {ESRCH, "ESRCH"}, {EINTR, "EINTR"},
  {EIO, "EIO"}, {ENXIO, "ENXIO"}, {E2BIG, "E2BIG"}, {ENOEXEC, "ENOEXEC"},
  {EBADF, "EBADF"}, {ECHILD, "ECHILD"}, {EAGAIN, "EAGAIN"},
  {ENOMEM, "ENOMEM"}, {EACCES, "EACCES"}, {EFAULT, "EFAULT"},
  {EBUSY, "EBUSY"}, {EEXIST, "EEXIST"}, {ENODEV, "ENODEV"},
  {ENOTDIR, "ENOTDIR"}, {EISDIR, "EISDIR"}, {EINVAL, "EINVAL"},
  {ENFILE, "ENFILE"}, {EMFILE, "EMFILE"}, {ENOTTY, "ENOTTY"},
  {EFBIG, "EFBIG"}, {ENOSPC, "ENOSPC"}, {ESPIPE, "ESPIPE"},
  {EROFS, "EROFS"}, {EPIPE, "EPIPE"}, {ERANGE, "ERANGE"},
  {ENAMETOOLONG, "ENAMETOOLONG"}, {ENOSYS, "ENOSYS"},
  {EOVERFLOW, "EOVERFLOW"}, {EOPNOTSUPP, "EOPNOTSUPP"},
  {ETIMEDOUT, "ETIMEDOUT"}, {ELOOP, "ELOOP"}, {ENOTSUP, "ENOTSUP"},
  {ENODATA, "ENODATA"},
};

const char *pl_errno_name(int err) {
  size_t i;
  for (i = 0; i < sizeof errnames / sizeof errnames[0]; i++)
    if (errnames[i].err == err) return errnames[i].name;
  return "E?";
}

/* perf.core.errno: the errno names above with their numbers, so that Lua
** code compares an errno with errno.EACCES, never with a number. */
void pl_open_errors(lua_State *L) {
  size_t i;
  lua_createtable(L, 0, (int)(sizeof errnames / sizeof errnames[0]));
  for (i = 0; i < sizeof errnames / sizeof errnames[0]; i++) {
    lua_pushinteger(L, errnames[i].err);
    lua_setfield(L, -2, errnames[i].name);
  }
  lua_setfield(L, -2, "errno");
}

int pl_fail(lua_State *L, int err, const char *what, const char *hint) {
  luaL_Buffer b;
  lua_pushnil(L);
  luaL_buffinit(L, &b);
  luaL_addstring(&b, what);
  lua_pushfstring(L, ": %s (%s)", strerror(err), pl_errno_name(err));
  luaL_addvalue(&b);
  if (hint && *hint) {
    luaL_addstring(&b, "; ");
    luaL_addstring(&b, hint);
  }
  luaL_pushresult(&b);
  lua_pushinteger(L, err);
  return 3;
}

static int read_sysctl(const char *path, long *v) {
  FILE *f = fopen(path, "re");
  int ok;
  if (!f) return 0;
  ok = fscanf(f, "%ld", v) == 1;
  fclose(f);
  return ok;
}

static int is_hw_type(uint32_t t) {
  return t == PERF_TYPE_HARDWARE || t == PERF_TYPE_HW_CACHE ||
         t == PERF_TYPE_RAW;
}

/* Appends formatted text to buf, never overrunning it. */
static void add(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strlen(buf);
  va_list ap;
  if (used + 1 >= len) return;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

/* Whether `type` is the uprobe or kprobe PMU, which (unlike msr, power or
** uncore PMUs) can sample and filter by mode. */
static int is_probe_pmu(uint32_t type) {
  long t;
  return (read_sysctl("/sys/bus/event_source/devices/uprobe/type", &t) && t == (long)type) ||
         (read_sysctl("/sys/bus/event_source/devices/kprobe/type", &t) && t == (long)type);
}

/* EINVAL has many causes: name the fields of this attr the kernel is known
** to refuse, most specific first. */
static void einval_hint(const struct pl_attr *a, pid_t pid, int cpu,
                        char *buf, size_t len) {
  long ncpu = sysconf(_SC_NPROCESSORS_CONF), rate;
  strcpy(buf, "");
  if (pid == -1 && cpu == -1) {
    add(buf, len, "pid -1 (any process) needs a cpu: give target.cpu");
    return;
  }
  if (cpu >= ncpu || cpu < -1) {
    add(buf, len, "cpu %d does not exist here", cpu);
    return;
  }
  if (a->type == PERF_TYPE_BREAKPOINT) {
    if (a->bp_type == 1)
      add(buf, len, "x86 has no read-only breakpoint: use bp_type \"rw\"");
    else if (a->bp_type == 4 && a->config2 != sizeof(long))
      add(buf, len, "execute breakpoints need bp_len = %ld", (long)sizeof(long));
    else if (a->config2 != 1 && a->config2 != 2 && a->config2 != 4 &&
             a->config2 != 8)
      add(buf, len, "bp_len must be 1, 2, 4 or 8");
    else if (a->config1 & (a->config2 - 1))
      add(buf, len, "bp_addr must be aligned to bp_len");
    else
      add(buf, len, "check bp_type (r/w/rw/x), bp_addr and bp_len");
    return;
  }
  if (PL_HAS(a, PL_FLAG_FREQ) &&
      read_sysctl("/proc/sys/kernel/perf_event_max_sample_rate", &rate) &&
      a->sample_period > (uint64_t)rate) {
    add(buf, len, "sample_freq is above kernel.perf_event_max_sample_rate (%ld)", rate);
    return;
  }
  if ((a->sample_type & PERF_SAMPLE_BRANCH_STACK) && !a->branch_sample_type) {
    add(buf, len, "sample_type branch_stack needs branch_sample_type (e.g. {\"any\", \"user\"})");
    return;
  }
  if (a->type > PERF_TYPE_BREAKPOINT && !is_probe_pmu(a->type) && a->sample_period) {
    add(buf, len, "PMUs such as msr, power and uncore only count: drop sample_period/sample_freq");
    return;
  }
  if (a->type > PERF_TYPE_BREAKPOINT && !is_probe_pmu(a->type) &&
      (a->flags & ((1ull << PL_FLAG_EXCLUDE_USER) | (1ull << PL_FLAG_EXCLUDE_KERNEL) |
                   (1ull << PL_FLAG_EXCLUDE_HV) | (1ull << PL_FLAG_EXCLUDE_IDLE)))) {
    add(buf, len, "PMUs such as msr, power and uncore count every mode: drop exclude_user/kernel/hv/idle");
    return;
  }
  if (a->sample_type >= PL_SAMPLE_MAX)
    add(buf, len, "sample_type has bits this kernel does not know; ");
  if (a->read_format >= (PERF_FORMAT_LOST << 1))
    add(buf, len, "read_format has unknown bits; ");
  if (a->clockid && !PL_HAS(a, PL_FLAG_USE_CLOCKID))
    add(buf, len, "clockid needs use_clockid; ");
  if (PL_HAS(a, PL_FLAG_SIGTRAP) && !PL_HAS(a, PL_FLAG_REMOVE_ON_EXEC))
    add(buf, len, "sigtrap needs remove_on_exec; ");
  if (PL_HAS(a, PL_FLAG_INHERIT_THREAD) && !PL_HAS(a, PL_FLAG_INHERIT))
    add(buf, len, "inherit_thread needs inherit; ");
  if (PL_HAS(a, PL_FLAG_INHERIT) && (a->read_format & PERF_FORMAT_GROUP))
    add(buf, len, "inherit with read_format group is refused by some kernels; ");
  if (PL_HAS(a, PL_FLAG_INHERIT) && (a->sample_type & PERF_SAMPLE_READ))
    add(buf, len, "inherit with sample_type read needs inherit_thread; ");
  if ((a->flags >> PL_FLAG_PRECISE_IP) & 3)
    add(buf, len, "precise_ip needs a PMU that supports it; ");
  if (a->flags >> PL_FLAG_COUNT)
    add(buf, len, "reserved flag bits are set; ");
  if (a->aux_action)
    add(buf, len, "aux_action needs an AUX-area PMU; ");
  if (buf[0]) {
    buf[strlen(buf) - 2] = '\0';      /* drop the last "; " */
    return;
  }
  if (a->type == PERF_TYPE_TRACEPOINT)
    add(buf, len, "the tracepoint refused this attr (check sample_type and flags)");
  else
    add(buf, len, "the kernel refused this combination of attr fields "
        "(check config, sample_type, read_format and the flags set)");
}

/* EOPNOTSUPP: the event exists, but its PMU cannot do something the attr
** asks for. Name what this attr asks that PMUs commonly lack. */
static void unsupported_hint(const struct pl_attr *a, char *buf, size_t len) {
  add(buf, len, "the PMU cannot do what this attr asks");
  if (a->sample_type & PERF_SAMPLE_BRANCH_STACK || a->branch_sample_type)
    add(buf, len, "; branch stacks (sample_type branch_stack) need a PMU with branch records");
  else if ((a->flags >> PL_FLAG_PRECISE_IP) & 3)
    add(buf, len, "; precise_ip needs a PMU with precise sampling");
  else if (PL_HAS(a, PL_FLAG_AUX_OUTPUT) || a->aux_sample_size || a->aux_action)
    add(buf, len, "; AUX output needs an AUX-area PMU");
  else if (a->sample_type & PERF_SAMPLE_REGS_INTR)
    add(buf, len, "; regs_intr needs a PMU that records interrupt registers");
  else if (a->sample_period)
    add(buf, len, "; this PMU counts but cannot sample: drop sample_period/sample_freq");
  else if (a->flags & ((1ull << PL_FLAG_EXCLUDE_USER) | (1ull << PL_FLAG_EXCLUDE_KERNEL) |
                       (1ull << PL_FLAG_EXCLUDE_HV) | (1ull << PL_FLAG_EXCLUDE_IDLE)))
    add(buf, len, "; this PMU cannot exclude user, kernel, hypervisor or idle time");
}

const char *pl_open_hint(int err, const struct pl_attr *a, pid_t pid, int cpu,
                         int group_fd, char *buf, size_t len) {
  long v;
  struct rlimit rl;
  buf[0] = '\0';
  switch (err) {
  case ENOENT:
    if (is_hw_type(a->type))
      add(buf, len, "this machine exposes no hardware PMU (see perf.capabilities())");
    else if (a->type == PERF_TYPE_SOFTWARE)
      add(buf, len, "the kernel has no software event with config %ld", (long)a->config);
    else if (a->type == PERF_TYPE_TRACEPOINT)
      add(buf, len, "no tracepoint has id %ld (see /sys/kernel/tracing/events)", (long)a->config);
    else
      add(buf, len, "the PMU does not know this type/config");
    break;
  case EOPNOTSUPP:
    unsupported_hint(a, buf, len);
    break;
  case EACCES:
  case EPERM:
    if (!read_sysctl("/proc/sys/kernel/perf_event_paranoid", &v)) v = 2;
    if (pid == -1)
      add(buf, len, "perf_event_paranoid is %ld: cpu-wide events need "
          "CAP_PERFMON (or paranoid <= 0)", v);
    else if (!PL_HAS(a, PL_FLAG_EXCLUDE_KERNEL) && v >= 2)
      add(buf, len, "perf_event_paranoid is %ld: set exclude_kernel = true "
          "(and exclude_hv) to count user space only, or run with CAP_PERFMON", v);
    else
      add(buf, len, "perf_event_paranoid is %ld: this event (or another user's "
          "process) needs CAP_PERFMON or a lower paranoid level", v);
    break;
  case EMFILE:
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
      add(buf, len, "the open-file limit (RLIMIT_NOFILE = %ld) is reached: "
          "close events or raise it (ulimit -n)", (long)rl.rlim_cur);
    break;
  case ENFILE:
    add(buf, len, "the system-wide open-file limit is reached");
    break;
  case ESRCH:
    add(buf, len, "no process with pid %ld", (long)pid);
    break;
  case EINVAL:
    einval_hint(a, pid, cpu, buf, len);
    break;
  case E2BIG:
    add(buf, len, "attr.size must be between 64 and the page size; this "
        "kernel's perf_event_attr is %ld bytes", (long)a->size);
    break;
  case EBUSY:
    add(buf, len, "the PMU is held exclusively by another event "
        "(an exclusive or pinned event, or another tool)");
    break;
  case ENOSPC:
    add(buf, len, "no free hardware breakpoint slot: this thread's breakpoints "
        "and the CPU-wide ones of any process take them (perf.capabilities()"
        ".max_breakpoints: how many are free now)");
    break;
  case EBADF:
    if (group_fd != -1)
      add(buf, len, "the group leader is not an open perf event");
    break;
  case EOVERFLOW:
    add(buf, len, "sample_max_stack is above kernel.perf_event_max_stack");
    break;
  case ENODEV:
    add(buf, len, "the PMU does not support this target (per-task or this cpu)");
    break;
  default:
    break;
  }
  return buf;
}
