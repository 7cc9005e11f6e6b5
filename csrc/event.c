/*
** event.c: the perf.event handle: open, read, every ioctl, close.
**
** A handle is made closed (fd = -1), given its metatable, and only then
** opened, so an error at any point leaves a consistent object that __gc can
** finalize. close, __gc and __close share one idempotent destroy.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "counter_read.h"
#include "perf_core.h"
#include "read_format.h"

static const pl_name ioc_flag_names[] = {{"group", PERF_IOC_FLAG_GROUP}, {NULL, 0}};

static const pl_name open_flag_names[] = {
  {"fd_no_group", PERF_FLAG_FD_NO_GROUP}, {"fd_output", PERF_FLAG_FD_OUTPUT},
  {"pid_cgroup", PERF_FLAG_PID_CGROUP}, {"fd_cloexec", PERF_FLAG_FD_CLOEXEC},
  {NULL, 0}
};

pl_event *pl_test_event(lua_State *L, int idx) {
  return (pl_event *)luaL_testudata(L, idx, PL_EVENT_MT);
}

pl_event *pl_check_event(lua_State *L, int idx) {
  pl_event *ev = (pl_event *)luaL_checkudata(L, idx, PL_EVENT_MT);
  if (ev->fd < 0) luaL_error(L, "attempt to use a closed perf event");
  return ev;
}

static const char *event_name(lua_State *L, int idx) {
  const char *s;
  lua_getiuservalue(L, idx, 1);
  s = lua_tostring(L, -1);
  lua_pop(L, 1);          /* the name stays referenced by the user value */
  return s ? s : "?";
}

/* "ev:<method> "<name>"", the `what` of a failed call's message */
static const char *what(lua_State *L, int idx, const char *method) {
  return lua_pushfstring(L, "%s \"%s\"", method, event_name(L, idx));
}

/* Pushes nil, msg, err for a failed call on the event at index 1. */
static int fail(lua_State *L, int err, const char *method, const char *hint) {
  const char *w = what(L, 1, method);
  return pl_fail(L, err, w, hint);
}

/* ---- opening ---- */

static long sys_perf_event_open(void *attr, pid_t pid, int cpu, int group_fd,
                                unsigned long flags) {
  return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

/* Whether the event of a failed cgroup open opens on `cpu` for every task:
** the kernel checks the cgroup after the event, and answers ENOENT both
** for an unknown event and for a cgroup of a hierarchy without perf_event. */
static int opens_without_cgroup(void *attr, int cpu) {
  int fd = (int)sys_perf_event_open(attr, -1, cpu < 0 ? 0 : cpu, -1,
                                    PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

int pl_event_new(lua_State *L, const struct pl_attr *attr, pid_t pid, int cpu,
                 int leader, unsigned long flags, const char *name) {
  /* An attr larger than ours is passed zero-padded: the kernel accepts
  ** unknown trailing bytes only when they are zero (and refuses sizes past a
  ** page with E2BIG before reading them). */
  unsigned char big[4096 + 64];
  struct pl_attr a = *attr;
  void *arg = &a;
  int group_fd = -1, fd, err;
  pl_event *ev, *lead = NULL;
  if (leader) {
    lead = pl_check_event(L, leader);
    group_fd = lead->fd;
  }
  ev = (pl_event *)lua_newuserdatauv(L, sizeof *ev, 3);
  memset(ev, 0, sizeof *ev);
  ev->fd = -1;
  luaL_setmetatable(L, PL_EVENT_MT);
  lua_pushstring(L, name);
  lua_setiuservalue(L, -2, 1);
  if (a.size == 0) a.size = sizeof a;
  if (a.size > sizeof a && a.size <= sizeof big) {
    memset(big, 0, sizeof big);
    memcpy(big, &a, sizeof a);
    arg = big;
  }
  fd = (int)sys_perf_event_open(arg, pid, cpu, group_fd,
                                flags | PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    char hint[512];
    err = errno;
    if (arg == big) memcpy(&a, big, sizeof a);   /* E2BIG writes back size */
    pl_open_hint(err, &a, pid, cpu, group_fd, hint, sizeof hint);
    if ((flags & PERF_FLAG_PID_CGROUP) && group_fd == -1 &&
        (err == EBADF || (err == ENOENT && opens_without_cgroup(arg, cpu))))
      snprintf(hint, sizeof hint, "the cgroup directory is not in a hierarchy with "
               "the perf_event controller: give a directory of the cgroup v2 "
               "hierarchy (mount -t cgroup2) or of a v1 hierarchy mounted with "
               "-o perf_event");
    /* the kernel wants a CPU with a cgroup (perf_event_open(2), EINVAL) */
    if ((flags & PERF_FLAG_PID_CGROUP) && cpu < 0 && err == EINVAL)
      snprintf(hint, sizeof hint, "a cgroup event counts on one CPU: give target.cpu "
               "(one event for each of perf.cpus.online()), or count the cgroup on "
               "every CPU with perf.stat({ cgroup = G }, events, { duration = s })");
    lua_pop(L, 1);
    return pl_fail(L, err, lua_pushfstring(L, "perf.open \"%s\"", name), hint);
  }
  ev->fd = fd;
  ev->attr = *attr;
  ev->attr.size = a.size;
  ev->pid = pid;
  ev->cpu = cpu;
  ev->owner = pl_self();
  ev->enabled = !PL_HAS(&ev->attr, PL_FLAG_DISABLED) &&
                !PL_HAS(&ev->attr, PL_FLAG_ENABLE_ON_EXEC);
  if (ioctl(fd, PERF_EVENT_IOC_ID, &ev->id) != 0) ev->id = 0;
  if (leader) {
    lua_pushvalue(L, leader);
    lua_setiuservalue(L, -2, 2);
  }
  return 1;
}

static const char *const target_keys[] = {"pid", "cpu", "group", "cgroup", "flags"};

/* The integer on top of the stack, target field `key`; raises naming it. */
static lua_Integer target_integer(lua_State *L, const char *key, const char *means) {
  int isint;
  lua_Integer v = lua_tointegerx(L, -1, &isint);
  if (!isint)
    luaL_error(L, "target field '%s': an integer expected (%s), got %s%s%s%s", key,
               means, luaL_typename(L, -1),
               lua_type(L, -1) == LUA_TSTRING ? " \"" : "",
               lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "",
               lua_type(L, -1) == LUA_TSTRING ? "\"" : "");
  return v;
}

/* Set by the ring file: see pl_output_fn in perf_core.h. */
static pl_output_fn on_output;

void pl_event_on_output(pl_output_fn fn) { on_output = fn; }

/* perf.core.open(attr [, target [, name]]) -> ev | nil, msg, errno */
static int l_open(lua_State *L) {
  struct pl_attr a;
  lua_Integer pid = 0, cpu = -1;
  unsigned long flags = 0;
  int leader = 0, cgfd = -1, n;
  const char *name;
  pl_attr_from_table(L, 1, &a);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    pl_check_keys(L, 2, target_keys, sizeof target_keys / sizeof *target_keys,
                  "unknown target field");
    if (lua_getfield(L, 2, "pid") != LUA_TNIL)
      pid = target_integer(L, "pid", "a thread id, 0 for this thread, -1 for any");
    if (lua_getfield(L, 2, "cpu") != LUA_TNIL)
      cpu = target_integer(L, "cpu", "a CPU number, -1 for any");
    if (lua_getfield(L, 2, "flags") != LUA_TNIL)
      flags = (unsigned long)pl_checkbits(L, -1, open_flag_names, "target field 'flags'");
    if (lua_getfield(L, 2, "group") != LUA_TNIL) {
      if (!pl_test_event(L, -1))
        return luaL_error(L, "target field 'group': perf.event expected, got %s",
                          luaL_typename(L, -1));
      leader = lua_gettop(L);
    }
    if (lua_getfield(L, 2, "cgroup") != LUA_TNIL) {
      const char *path = luaL_checkstring(L, -1);
      cgfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (cgfd < 0) {
        int err = errno;
        return pl_fail(L, err, lua_pushfstring(L, "perf.open: cgroup \"%s\"", path),
                       "give the cgroup's directory");
      }
      pid = cgfd;
      flags |= PERF_FLAG_PID_CGROUP;
    }
    if (pid < -1 || pid > 0x7fffffff)
      return luaL_error(L, "target field 'pid': out of range");
    if (cpu < -1 || cpu > 0x7fffffff)
      return luaL_error(L, "target field 'cpu': out of range");
  }
  name = luaL_optstring(L, 3, NULL);
  if (!name) {
    pl_push_event_name(L, &a);
    name = lua_tostring(L, -1);
  }
  n = pl_event_new(L, &a, (pid_t)pid, (int)cpu, leader, flags, name);
  if (cgfd >= 0) close(cgfd);
  if (n == 1 && leader && (flags & PERF_FLAG_FD_OUTPUT) && !lua_isnil(L, -1)) {
    int failed = on_output ? on_output(L, -1, leader) : 0;
    if (failed) return failed;
  }
  return n;
}

/* ---- reading ---- */

/* Decodes one read(2) of the event per its read_format (read_format.h).
** A group read is searched for this event's own id. */
int pl_event_read(const pl_event *ev, uint64_t *value, uint64_t *enabled,
                  uint64_t *running, uint64_t *lost) {
  uint64_t buf[512];
  uint64_t rf = ev->attr.read_format, nr, i;
  pl_counts c;
  size_t k, per, words;
  ssize_t n = pl_counter_read(ev->fd, buf, sizeof buf);
  if (n < 0) return errno;
  if (n == 0) return -1;              /* error state: see PL_EOF_HINT */
  words = (size_t)n / 8;
  if (!(rf & PL_F_GROUP)) {
    if (words < pl_rf_single_words(rf)) return EIO;
    pl_rf_single(buf, rf, &c);
  } else {
    k = pl_rf_head_words(rf);
    per = pl_rf_entry_words(rf);
    if (words < k) return EIO;
    nr = pl_rf_head(buf, rf, &c);
    if (nr > (words - k) / per) return EIO;
    for (i = 0; i < nr; i++, k += per) {
      pl_rf_entry(buf + k, rf, &c);
      /* without ids, the leader (a read of a member alone gives nr = 1) */
      if ((rf & PL_F_ID) ? c.id == ev->id : i == 0) break;
    }
    if (i == nr) return ENOENT;
  }
  *value = c.value;
  *enabled = c.enabled;
  *running = c.running;
  *lost = c.lost;
  return 0;
}

#define PL_EOF_HINT "the event is in error state (a pinned event that lost " \
                    "its place on the PMU); reopen it"

static int read_failed(lua_State *L, int err) {
  if (err < 0) return fail(L, EIO, "ev:read", PL_EOF_HINT);
  return fail(L, err, "ev:read", err == ENOSPC ? "the group has too many members to read at once" : NULL);
}

/* ev:read is the hot path: its closure holds the metatable (upvalue 1), so
** the type check is a pointer comparison; luaL_checkudata's registry lookup
** by name costs a third of what ev:read may add to the read(2) itself. */
static pl_event *check_event_fast(lua_State *L) {
  pl_event *ev = (pl_event *)lua_touserdata(L, 1);
  if (!ev || !lua_getmetatable(L, 1) || !lua_rawequal(L, -1, lua_upvalueindex(1)))
    return pl_check_event(L, 1);
  /* the metatable stays on the stack: the results are the values pushed last */
  if (ev->fd < 0) luaL_error(L, "attempt to use a closed perf event");
  return ev;
}

/* ev:read() -> value, time_enabled, time_running [, lost] */
static int l_read(lua_State *L) {
  pl_event *ev = check_event_fast(L);
  uint64_t rf = ev->attr.read_format;
  pl_counts c;
  if (!(rf & PL_F_GROUP)) {
    /* one event alone, read in place */
    uint64_t buf[5];
    ssize_t n = pl_counter_read(ev->fd, buf, sizeof buf);
    if (n <= 0) return read_failed(L, n < 0 ? errno : -1);
    if ((size_t)n < 8 * pl_rf_single_words(rf)) return read_failed(L, EIO);
    pl_rf_single(buf, rf, &c);
  } else {
    int err = pl_event_read(ev, &c.value, &c.enabled, &c.running, &c.lost);
    if (err) return read_failed(L, err);
  }
  lua_pushinteger(L, (lua_Integer)c.value);
  if (rf & PL_F_TOTAL_TIME_ENABLED) lua_pushinteger(L, (lua_Integer)c.enabled);
  else lua_pushnil(L);
  if (rf & PL_F_TOTAL_TIME_RUNNING) lua_pushinteger(L, (lua_Integer)c.running);
  else lua_pushnil(L);
  if (!(rf & PL_F_LOST)) return 3;
  lua_pushinteger(L, (lua_Integer)c.lost);
  return 4;
}

/* ev:scaled() -> estimate, fraction_running: the count a multiplexed event
** would have reached had it run all the time it was enabled (pl_scale). */
static int l_scaled(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  uint64_t v, en, run, lost;
  double fraction = 1.0;
  int err = pl_event_read(ev, &v, &en, &run, &lost);
  if (err) return read_failed(L, err);
  /* without both times the count is taken as exact */
  if ((ev->attr.read_format & PL_F_TIMES) == PL_F_TIMES)
    v = pl_scale(v, en, run, &fraction);
  lua_pushinteger(L, (lua_Integer)v);
  lua_pushnumber(L, (lua_Number)fraction);
  return 2;
}

/* ---- ioctls ---- */

static unsigned long ioc_flags(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  if (lua_isboolean(L, idx)) return lua_toboolean(L, idx) ? PERF_IOC_FLAG_GROUP : 0;
  return (unsigned long)pl_checkbits(L, idx, ioc_flag_names, "ioctl flags");
}

static int simple_ioctl(lua_State *L, unsigned long req, const char *method,
                        int state) {
  pl_event *ev = pl_check_event(L, 1);
  unsigned long fl = ioc_flags(L, 2);
  if (ioctl(ev->fd, req, fl) != 0) return fail(L, errno, method, NULL);
  if (state >= 0) ev->enabled = state;
  lua_pushboolean(L, 1);
  return 1;
}

static int l_enable(lua_State *L) {
  return simple_ioctl(L, PERF_EVENT_IOC_ENABLE, "ev:enable", 1);
}
static int l_disable(lua_State *L) {
  return simple_ioctl(L, PERF_EVENT_IOC_DISABLE, "ev:disable", 0);
}
static int l_reset(lua_State *L) {
  return simple_ioctl(L, PERF_EVENT_IOC_RESET, "ev:reset", -1);
}

/* ev:refresh(n): enable for n more overflows (sampling events only) */
static int l_refresh(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 0 && n <= 0x7fffffff, 2, "out of range");
  if (ioctl(ev->fd, PERF_EVENT_IOC_REFRESH, (unsigned long)n) != 0) {
    int err = errno;
    return fail(L, err, "ev:refresh", err == EINVAL ?
                "refresh needs a sampling event (sample_period set) that is not inherited" : NULL);
  }
  ev->enabled = 1;
  lua_pushboolean(L, 1);
  return 1;
}

/* ev:period(n): a new sample period (or frequency, for freq events) */
static int l_period(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  uint64_t p = (uint64_t)luaL_checkinteger(L, 2);
  if (ioctl(ev->fd, PERF_EVENT_IOC_PERIOD, &p) != 0) {
    int err = errno;
    return fail(L, err, "ev:period", err == EINVAL ?
                "the period must be non-zero (and at most the max sample rate for freq events) on a sampling event" : NULL);
  }
  ev->attr.sample_period = p;
  lua_pushboolean(L, 1);
  return 1;
}

/* ev:set_filter(text): a tracepoint filter (or address filter for AUX) */
static int l_set_filter(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  const char *text = luaL_checkstring(L, 2);
  if (ioctl(ev->fd, PERF_EVENT_IOC_SET_FILTER, text) != 0) {
    int err = errno;
    int tp = ev->attr.type == PERF_TYPE_TRACEPOINT;
    fail(L, err, "ev:set_filter", err == EINVAL ?
         (tp ? "the kernel rejected the filter text: compare field names and "
               "operators with the tracepoint's format file" :
               "filters apply to tracepoints (and address filters to AUX PMUs)") :
         err == EEXIST ? "this event already has a filter: the kernel sets "
         "one per event, so open a new event for another filter" : NULL);
    /* nil, msg, errno: the message names the fields the format lacks */
    if (err == EINVAL && tp && pl_explain_filter(L, (long long)ev->attr.config, text)) {
      lua_pushfstring(L, "%s; %s", lua_tostring(L, -3), lua_tostring(L, -1));
      lua_replace(L, -4);
      lua_pop(L, 1);
    }
    return 3;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_id(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  uint64_t id;
  if (ioctl(ev->fd, PERF_EVENT_IOC_ID, &id) != 0) return fail(L, errno, "ev:id", NULL);
  ev->id = id;
  lua_pushinteger(L, (lua_Integer)id);
  return 1;
}

/* ev:set_bpf(prog_fd): attach a BPF program to a tracepoint/kprobe event */
static int l_set_bpf(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  lua_Integer prog = luaL_checkinteger(L, 2);
  luaL_argcheck(L, prog >= 0 && prog <= 0x7fffffff, 2, "not a file descriptor");
  if (ioctl(ev->fd, PERF_EVENT_IOC_SET_BPF, (unsigned long)prog) != 0) {
    int err = errno;
    return fail(L, err, "ev:set_bpf", err == EBADF ?
                "the argument must be the fd of a loaded BPF program" :
                err == EINVAL ? "the fd must be a loaded BPF program whose type fits the event "
                "(tracepoint, kprobe or perf_event programs)" :
                err == EEXIST ? "the event has a program already: one per event" : NULL);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ev:pause_output(bool): stop (true) or resume (false) writing to the ring */
static int l_pause_output(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  unsigned long on;
  luaL_checkany(L, 2);
  on = (unsigned long)lua_toboolean(L, 2);
  if (ioctl(ev->fd, PERF_EVENT_IOC_PAUSE_OUTPUT, on) != 0) {
    int err = errno;
    return fail(L, err, "ev:pause_output", err == EINVAL ?
                "the event needs a ring buffer (ev:mmap) first" : NULL);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ev:query_bpf([max]) -> list of the BPF program ids attached */
static int l_query_bpf(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  lua_Integer max = luaL_optinteger(L, 2, 64), i;
  struct { uint32_t ids_len, prog_cnt, ids[256]; } q;
  luaL_argcheck(L, max >= 0 && max <= 256, 2, "out of range (0..256)");
  memset(&q, 0, sizeof q);
  q.ids_len = (uint32_t)max;
  if (ioctl(ev->fd, PERF_EVENT_IOC_QUERY_BPF, &q) != 0) {
    int err = errno;
    return fail(L, err, "ev:query_bpf", err == EINVAL ?
                "only tracepoint, kprobe and uprobe events carry BPF programs" :
                err == ENOSPC ? "more programs are attached than max" : NULL);
  }
  lua_createtable(L, (int)q.prog_cnt, 0);
  for (i = 0; i < (lua_Integer)q.prog_cnt && i < max; i++) {
    lua_pushinteger(L, q.ids[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* Raises when a breakpoint's new bp_addr, bp_len or bp_type is one the
** kernel refuses, saying which (as perf.watch checks them): lengths 1, 2, 4
** or 8, aligned to the length; execute breakpoints take sizeof(long)
** (arch_build_bp_info in arch/x86/kernel/hw_breakpoint.c). */
static void check_breakpoint(lua_State *L, const struct pl_attr *a) {
  uint64_t addr = a->config1, len = a->config2;
  if (a->bp_type == 4) {                              /* HW_BREAKPOINT_X */
    if (len != sizeof(long))
      luaL_error(L, "ev:modify_attributes: execute breakpoints need bp_len = %d "
                 "(sizeof(long)), not %I", (int)sizeof(long), (lua_Integer)len);
    return;
  }
  if (len != 1 && len != 2 && len != 4 && len != 8)
    luaL_error(L, "ev:modify_attributes: bp_len must be 1, 2, 4 or 8, not %I",
               (lua_Integer)len);
  if (addr % len != 0) {
    char msg[160];
    snprintf(msg, sizeof msg, "ev:modify_attributes: address 0x%" PRIx64 " is not "
             "aligned to bp_len %d; use bp_len 1 or the aligned address 0x%" PRIx64,
             addr, (int)len, addr - addr % len);
    luaL_error(L, "%s", msg);
  }
}

/* ev:modify_attributes(fields): change an open event (breakpoints: bp_addr,
** bp_len, bp_type); the other fields stay as opened. A breakpoint that
** moves is renamed after its new place ("mem:0x1000/8:w"). */
static int l_modify_attributes(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  struct pl_attr a = ev->attr;
  int bp = ev->attr.type == PERF_TYPE_BREAKPOINT;
  luaL_checktype(L, 2, LUA_TTABLE);
  pl_resolve_names(L, 2, ev->attr.type);
  lua_replace(L, 2);
  /* the kernel re-enables a modified breakpoint only if attr.disabled is
  ** clear (perf_event_modify_breakpoint): keep the state the event is in */
  a.flags &= ~(1ull << PL_FLAG_DISABLED);
  a.flags |= (uint64_t)!ev->enabled << PL_FLAG_DISABLED;
  pl_attr_update(L, 2, &a);
  if (bp && a.type == PERF_TYPE_BREAKPOINT) check_breakpoint(L, &a);
  if (ioctl(ev->fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &a) != 0) {
    int err = errno;
    return fail(L, err, "ev:modify_attributes", err != EINVAL ?
                (err == EOPNOTSUPP ? "this event type cannot be modified" : NULL) :
                !bp ? "only breakpoint events can be modified, and only bp_addr, "
                "bp_len and bp_type" :
                a.type != PERF_TYPE_BREAKPOINT ? "only breakpoint events can be modified, "
                "and a breakpoint stays one: its type cannot change" :
                "the kernel refused the new place: only bp_addr, bp_len and bp_type "
                "change, and a kernel address needs exclude_kernel = false");
  }
  if (bp && (a.config1 != ev->attr.config1 || a.config2 != ev->attr.config2 ||
             a.bp_type != ev->attr.bp_type)) {
    pl_push_event_name(L, &a);
    lua_setiuservalue(L, 1, 1);
  }
  ev->attr = a;
  ev->enabled = !PL_HAS(&a, PL_FLAG_DISABLED);
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- introspection and lifecycle ---- */

static int l_attr(lua_State *L) {
  pl_attr_push(L, &pl_check_event(L, 1)->attr);
  return 1;
}

static int l_name(lua_State *L) {
  pl_check_event(L, 1);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

static int l_fileno(lua_State *L) {
  lua_pushinteger(L, pl_check_event(L, 1)->fd);
  return 1;
}

static void destroy(pl_event *ev) {
  if (ev->fd >= 0) {
    int fd = ev->fd;
    ev->fd = -1;
    close(fd);            /* not retried on EINTR: the fd is gone either way */
  }
}

static int l_close(lua_State *L) {
  destroy((pl_event *)luaL_checkudata(L, 1, PL_EVENT_MT));
  lua_pushboolean(L, 1);
  return 1;
}

static int l_gc(lua_State *L) {
  destroy((pl_event *)luaL_checkudata(L, 1, PL_EVENT_MT));
  return 0;
}

static int l_tostring(lua_State *L) {
  pl_event *ev = (pl_event *)luaL_checkudata(L, 1, PL_EVENT_MT);
  const char *name = event_name(L, 1);
  uint64_t v, en, run, lost;
  if (ev->fd < 0) {
    lua_pushfstring(L, "perf.event \"%s\" (closed)", name);
  } else if (pl_event_read(ev, &v, &en, &run, &lost) == 0) {
    lua_pushfstring(L, "perf.event \"%s\" (fd %d, %s, %I)", name, ev->fd,
                    ev->enabled ? "enabled" : "disabled", (lua_Integer)v);
  } else {
    lua_pushfstring(L, "perf.event \"%s\" (fd %d, %s)", name, ev->fd,
                    ev->enabled ? "enabled" : "disabled");
  }
  return 1;
}

static const luaL_Reg methods[] = {
  {"read", l_read}, {"scaled", l_scaled},
  {"enable", l_enable}, {"disable", l_disable}, {"reset", l_reset},
  {"refresh", l_refresh}, {"period", l_period},
  {"set_filter", l_set_filter},
  {"id", l_id}, {"set_bpf", l_set_bpf}, {"pause_output", l_pause_output},
  {"query_bpf", l_query_bpf}, {"modify_attributes", l_modify_attributes},
  {"attr", l_attr}, {"name", l_name}, {"fileno", l_fileno},
  {"close", l_close},
  {NULL, NULL}
};

static const luaL_Reg metamethods[] = {
  {"__gc", l_gc}, {"__close", l_gc}, {"__tostring", l_tostring},
  {NULL, NULL}
};

static const luaL_Reg functions[] = {
  {"open", l_open},
  {NULL, NULL}
};

void pl_event_ext(lua_State *L, int evidx) {
  evidx = lua_absindex(L, evidx);
  if (lua_getiuservalue(L, evidx, 3) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, evidx, 3);
  }
}

void pl_open_event(lua_State *L) {
  pl_new_metatable(L, PL_EVENT_MT, metamethods, methods);
  lua_getfield(L, -1, "__index");
  lua_pushvalue(L, -2);
  lua_pushcclosure(L, l_read, 1);
  lua_setfield(L, -2, "read");
  lua_setfield(L, -3, "event_methods");  /* to read: nothing patches them */
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
  lua_createtable(L, (int)(sizeof target_keys / sizeof *target_keys), 0);
  for (size_t i = 0; i < sizeof target_keys / sizeof *target_keys; i++) {
    lua_pushstring(L, target_keys[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "target_keys");
}
