/*
** profile.c: overflow samples charged to the Lua code that was running.
**
**   core.profile_state(ev [, ring]) -> st   (ev: notify() called already)
**   st:start([level, extra])  st:stop()  st:result() -> samples, lost, stacks
**   st:close()                (also __gc)
**   core.profile_resume(resume), core.profile_wrap(resume) -> function
**   core.profile_vm() -> path of the object that holds the Lua VM
**   core.profile_running() -> whether a profiler runs
**
** The event's overflow signal (signal.c) calls on_overflow, which counts
** the overflow and arms a count hook on the running Lua thread with
** lua_sethook: ldebug.c documents lua_sethook as safe to call from a
** signal handler, and lua.c's laction does the same for ^C. Nothing else
** happens in the handler: no Lua, no allocation. At the thread's next VM
** step (count), or when the C function it was in returns (ret) or calls
** back into Lua (call), the hook walks the stack with lua_getinfo and
** charges every overflow counted so far to it, then disarms itself.
**
** Samples are aggregated by stack in a Lua table: key = the frames, leaf
** first, one per line ("L" name TAB source TAB linedefined TAB line for a
** Lua function, "C" name for a C function, "c" name for one the sample is
** in, above the innermost Lua frame, "N" hex address for a native frame),
** value = samples.
**
** One profiler runs at a time (P below); the signal handler and the hook
** only touch P. The thread to arm is P.current: the thread that started,
** or the coroutine resumed through the wrappers of coroutine.resume and
** coroutine.wrap that the Lua side installs while profiling.
**
** With a ring the event's sample records carry what the hook cannot see:
** the native call chain (PERF_SAMPLE_CALLCHAIN, native mode) and the
** values of the group it leads (PERF_SAMPLE_READ with PERF_FORMAT_GROUP
** and ID, for counters = {...}: profile_counters.c charges their deltas).
** The kernel writes the record before it queues the signal, so when the
** hook takes n overflows the oldest n sample records in the ring are theirs.
*/
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ring.h"
#include "profile.h"
#include "keybuf.h"
#include "lua_layout.h"
#include "lua_locate_self.h"
#include "profile_arm.h"

#define PL_PROFSTATE_MT "perf.profstate"
#define LEAFFRAMES 224          /* Lua and C frames kept per sample from the leaf, */
#define ROOTFRAMES 32           /* and from the root of a deeper stack */
#define MAXNATIVE 64            /* native frames kept per sample */
#define MAXREAD 17              /* group values kept per sample: leader + 16 */

typedef struct profstate {
  int open;
  int active;
  int native;
  uint64_t samples;             /* overflows charged */
  uint64_t lost;                /* overflows counted but not charged */
} profstate;

static struct {
  profstate *owner;             /* the running profiler, NULL when idle */
  pl_profile_weigh_fn weigh;    /* the weight of charged samples (NULL: 1 each) */
  pl_profile_charge_fn on_charge; /* called with each key charged, or NULL */
  int charging;                 /* the hook is charging (its allocations are its own) */
  pl_ring *ring;                /* its ring (native frames, group values) */
  int nread;                    /* group values of the sample being charged */
  uint64_t read_value[MAXREAD], read_id[MAXREAD];
  lua_State *base;              /* thread that started */
  int skip;                     /* root frames of `base` not charged */
  pl_keybuf key, full;          /* the key being made: Lua frames; with native ones */
} P;

static void hook(lua_State *L, lua_Debug *ar);

/* In the signal handler: async-signal-safe. */
static void on_overflow(const void *uc) {
  uintptr_t regs[PL_LUA_MAXREGS];
  pl_lua_where w;
  pl_lua_where_uc(uc, regs, &w);
  pl_arm_take(1, &w);
}

/* ---- for the files that extend the profiler (profile.h) ---- */

void pl_profile_overflow(const void *uc) { on_overflow(uc); }

void pl_profile_add(unsigned long n) {
  pl_lua_where w;
  pl_lua_where_here(&w);
  pl_arm_take(n, &w);
}

void pl_profile_add_uc(unsigned long n, const void *uc) {
  uintptr_t regs[PL_LUA_MAXREGS];
  pl_lua_where w;
  pl_lua_where_uc(uc, regs, &w);
  pl_arm_take(n, &w);
}

void pl_profile_set_weigh(pl_profile_weigh_fn fn) { P.weigh = fn; }

void pl_profile_set_on_charge(pl_profile_charge_fn fn) { P.on_charge = fn; }

int pl_profile_charging(void) { return P.charging; }

const int *pl_profile_charging_flag(void) { return &P.charging; }

int pl_profile_sample_read(const uint64_t **values, const uint64_t **ids) {
  *values = P.read_value;
  *ids = P.read_id;
  return P.nread;
}

/* ---- the stack walk ---- */

static int stack_depth(lua_State *L) {
  lua_Debug ar;
  int lo = 0, hi = 1;
  while (lua_getstack(L, hi, &ar)) { lo = hi; hi *= 2; }
  while (lo + 1 < hi) {               /* lo exists, hi does not */
    int mid = (lo + hi) / 2;
    if (lua_getstack(L, mid, &ar)) lo = mid; else hi = mid;
  }
  return lua_getstack(L, 0, &ar) ? lo + 1 : 0;
}

/* Adds the frames of T from level `from` (leaf first) to k; leading C
** frames are dropped when `trim` is 1, keyed "c" name when it is 2 (the
** C function the sample is in: its caller's line is charged, the
** function's Total counts it). At most `budget` frames: *next (when
** given) is set to the level where frames are left, -1 when none are.
** Returns the frames added. */
static int add_frames(lua_State *T, int from, int trim, int budget, pl_keybuf *k,
                      int *next) {
  lua_Debug ar;
  int until = -1, added = 0, level;
  /* the profiler's frames under the profiled function; while the profiler
  ** itself runs (starting, stopping), all of them: none is charged */
  if (T == P.base && P.skip > 0) {
    until = stack_depth(T) - P.skip;
    if (until < 0) until = 0;
  }
  if (next) *next = -1;
  for (level = from; lua_getstack(T, level, &ar); level++) {
    if (until >= 0 && level >= until) break;
    if (added == budget) {            /* frames are left */
      if (next) *next = level;
      break;
    }
    if (!lua_getinfo(T, "Sln", &ar)) break;
    int c = ar.what[0] == 'C';
    if (c && trim == 1) continue;
    if (c) {
      pl_keybuf_printf(k, "%c%s\n", trim ? 'c' : 'C', ar.name ? ar.name : "?");
    } else {
      trim = 0;
      pl_keybuf_printf(k, "L%s\t%s\t%d\t%d\n",
                       ar.what[0] == 'm' ? "main chunk" : ar.name ? ar.name : "",
                       ar.short_src, ar.linedefined, ar.currentline);
    }
    added++;
  }
  return added;
}

/* Frames of T charged from `level` on (all of them: to its root). */
static int frames_from(lua_State *T, int level) {
  int depth = stack_depth(T);
  if (T == P.base && P.skip > 0) depth -= P.skip;
  return depth > level ? depth - level : 0;
}

/* A stack deeper than LEAFFRAMES whose leaf part stopped at `level` of
** chain[t] (-1: at its end, the threads that resumed it are left): adds a
** line "E" n (n stack levels elided) and the ROOTFRAMES frames at the root
** of the outermost thread, chain[n - 1]. */
static void add_root(lua_State **chain, int n, int t, int level, pl_keybuf *k) {
  lua_State *T = chain[t], *R = chain[n - 1];
  int elided = level >= 0 ? frames_from(T, level) : 0;
  for (int i = t + 1; i < n; i++) elided += frames_from(chain[i], 0);
  int depth = frames_from(R, 0);                 /* R's levels charged */
  int start = depth > ROOTFRAMES ? depth - ROOTFRAMES : 0;
  if (R == T && start < level) start = level;
  elided -= depth - start;                        /* the root part is kept */
  if (elided > 0) pl_keybuf_printf(k, "E%d\n", elided);
  add_frames(R, start, start == 0 && R != T ? 1 : 0, ROOTFRAMES, k, NULL);
}

/* The Lua part of the stack key for the thread L, from level `from`, into
** k: L's frames, then those of the threads that resumed it; a stack deeper
** than LEAFFRAMES keeps its leaf and its root, the middle elided. */
static void lua_stack_key(lua_State *L, int from, pl_keybuf *k) {
  lua_State *chain[PL_LUA_MAXCHAIN + 1];
  chain[0] = L;
  int n = 1 + pl_arm_resumers(L, chain + 1, PL_LUA_MAXCHAIN);
  int budget = LEAFFRAMES, next = -1, t;
  pl_keybuf_reset(k);
  for (t = 0; t < n; t++) {
    budget -= add_frames(chain[t], t == 0 ? from : 0, t == 0 ? 2 : 1, budget, k, &next);
    if (budget == 0) break;
  }
  if (t < n && budget == 0 && (next >= 0 || t + 1 < n)) add_root(chain, n, t, next, k);
}

/* ---- sample records from the ring ---- */

/* Keeps the group values of a decoded sample for pl_profile_sample_read. */
static void keep_read(const pl_sample *sm) {
  uint64_t nr = sm->read.nr, lost;
  if (!(sm->read.format & PL_F_GROUP)) nr = 1;
  if (nr > MAXREAD) nr = MAXREAD;
  for (uint64_t i = 0; i < nr; i++)
    pl_readv_entry(&sm->read, i, &P.read_value[i], &P.read_id[i], &lost);
  P.nread = (int)nr;
}

/* Reads the user call chain of a decoded sample into ips (up to max, leaf
** first, stopping at the first address no loaded object holds). */
static int user_chain(const pl_sample *sm, uint64_t *ips, int max) {
  int n = 0, user = 0;
  for (uint64_t i = 0; i < sm->callchain_nr && n < max; i++) {
    uint64_t ip = pl_u64at(sm->callchain + 8 * i);
    if (ip >= PL_CONTEXT_MAX) { user = ip == PL_CONTEXT_USER; continue; }
    if (!user) continue;
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)ip, &info) || !info.dli_fname) break;
    ips[n++] = ip;
  }
  return n;
}

/* Takes the next sample record: its native frames into ips (the count is
** returned) and its group values (P.nread). Returns 0 with P.nread = 0
** for an overflow whose record was lost, -1 when no record is left.
** *lost carries PERF_RECORD_LOST counts between calls. */
static int next_sample(pl_ring *r, uint64_t *ips, int max, uint64_t *lost) {
  P.nread = 0;
  if (*lost > 0) { (*lost)--; return 0; }
  if (r->nlayouts < 1) return -1;
  uint64_t head = pl_ring_head(r);
  for (;;) {
    uint64_t tail = pl_ring_tail(r);
    const unsigned char *p;
    size_t len;
    if (pl_rbuf_next(&r->rb, head, tail, &p, &len) != PL_RBUF_RECORD) {
      if (head != tail) pl_ring_set_tail(r, head);   /* unframeable: drop */
      return -1;
    }
    pl_record rec;
    const char *why;
    int n = -2;
    if (pl_decode(p, len, &r->layouts[0], &rec, &why) == PL_DECODE_OK) {
      if (rec.type == PL_REC_SAMPLE) {
        n = user_chain(&rec.u.sample, ips, max);
        if (rec.layout->sample_type & PL_S_READ) keep_read(&rec.u.sample);
      } else if (rec.type == PL_REC_LOST) {
        *lost += rec.u.lost.lost;
      }
    }
    pl_ring_set_tail(r, tail + len);   /* what it held is copied out */
    if (n >= 0) return n;
    if (*lost > 0) { (*lost)--; return 0; }
  }
}

/* ---- the hook ---- */

/* What the hook charges, for charge_protected. */
typedef struct charge_args {
  int event;
  unsigned long n;              /* overflows to charge */
  unsigned long gc;             /* of which taken while the collector ran: the first ones */
  unsigned long done;           /* of which charged */
} charge_args;

/* The frame a sample taken in a collector step gets, under the line whose
** allocation started the step (the hook runs right after the step). */
#define GC_FRAME "C[gc]\n"

/* Adds k samples (weighed) to the key at the top; pops it. */
static void add_sample(lua_State *L, int stacks, unsigned long k) {
  if (P.on_charge) P.on_charge(L, lua_gettop(L));
  P.nread = 0;
  lua_pushvalue(L, -1);
  lua_Integer have = lua_rawget(L, stacks) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  lua_pushinteger(L, have + (P.weigh ? P.weigh(k) : (lua_Integer)k));
  lua_rawset(L, stacks);
}

/* lua_CFunction run by the hook under lua_pcall (light userdata: the
** charge_args): charges the overflows to the stack. The keys are made in
** C memory and pushed once each (no luaL_Buffer: see hook). */
static int charge_protected(lua_State *L) {
  charge_args *a = (charge_args *)lua_touserdata(L, 1);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &P) != LUA_TTABLE) return 0;
  int stacks = lua_gettop(L);
  /* level 0 is this function; a call hook runs in the callee before its
  ** first instruction (level 1): the sample belongs to the caller */
  lua_stack_key(L, a->event == LUA_HOOKCALL ? 2 : 1, &P.key);
  uint64_t lost = 0;
  if (P.key.failed) return luaL_error(L, "not enough memory");
  while (a->done < a->n) {
    int gc = a->done < a->gc;
    /* samples charged to this key */
    unsigned long k = gc ? a->gc - a->done : a->n - a->done;
    pl_keybuf_reset(&P.full);
    if (P.ring && P.ring->base) {
      uint64_t ips[MAXNATIVE];
      int m = next_sample(P.ring, ips, MAXNATIVE, &lost);
      if (m >= 0) k = 1;
      for (int j = 0; j < m; j++) pl_keybuf_printf(&P.full, "N%llx\n", (unsigned long long)ips[j]);
    }
    if (gc) pl_keybuf_add(&P.full, GC_FRAME, sizeof GC_FRAME - 1);
    pl_keybuf_add(&P.full, P.key.p, P.key.n);
    if (P.full.failed) return luaL_error(L, "not enough memory");
    lua_pushlstring(L, P.full.p, P.full.n);
    add_sample(L, stacks, k);
    if (P.owner) P.owner->samples += k;
    a->done += k;
  }
  return 0;
}

/* Charges n overflows to the stack of L, never raising: a memory error
** (or any other) loses what it did not charge. */
static void charge(lua_State *L, int event, unsigned long n, unsigned long gc) {
  charge_args a = { event, n, gc, 0 };
  if (lua_checkstack(L, 3)) {
    lua_pushcfunction(L, charge_protected);
    lua_pushlightuserdata(L, &a);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);
  }
  if (P.owner) P.owner->lost += n - a.done;
}

/* The hook. It runs on the interrupted function's CallInfo (ldo.c's
** luaD_hook calls it with L->ci unchanged), so it must leave that frame
** as it found it: a to-be-closed slot made there (lauxlib's luaL_Buffer
** boxes a buffer that outgrows LUAL_BUFFERSIZE and marks it with
** lua_toclose, 5.4.3 and later) marks the interrupted Lua function's
** nresults, and lvm.c's OP_RETURN0/OP_RETURN1 fast paths then leave the
** missing results of its return unfilled. Everything that pushes runs
** inside the lua_pcall of charge(), in a CallInfo of its own, and an
** error there (out of memory) ends in charge() instead of in the
** program's code. */
static void hook(lua_State *L, lua_Debug *ar) {
  unsigned long gc, n = pl_arm_hooked(L, &gc);
  if (n && P.owner) { P.charging = 1; charge(L, ar->event, n, gc); P.charging = 0; }
  pl_arm_done(L);
}

/* ---- the state handle ---- */

static profstate *check_state(lua_State *L) {
  return (profstate *)luaL_checkudata(L, 1, PL_PROFSTATE_MT);
}

static int event_fd(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);
  pl_event *ev = pl_test_event(L, -1);
  lua_pop(L, 1);
  return ev ? ev->fd : -1;
}

/* Stops the state at idx if it runs; never raises. */
static void stop(lua_State *L, int idx, profstate *st) {
  if (!st->active) return;
  int fd = event_fd(L, idx);
  if (fd >= 0) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  /* signals of overflows before the disable were delivered when the
  ** ioctl returned: what they armed is counted below, not charged */
  lua_getiuservalue(L, idx, 1);
  if (pl_test_event(L, -1) && fd >= 0) pl_signal_set_callback(L, lua_gettop(L), NULL);
  lua_pop(L, 1);
  st->lost += pl_arm_stop();
  st->active = 0;
  P.owner = NULL;
  P.ring = NULL;
  P.base = NULL;
  pl_keybuf_free(&P.key);
  pl_keybuf_free(&P.full);
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &P);
}

/* core.profile_state(ev [, ring]); ev nil: the samples come from
** pl_profile_add (profile.h) */
static int state_new(lua_State *L) {
  if (!lua_isnil(L, 1)) pl_check_event(L, 1);
  if (!lua_isnoneornil(L, 2)) pl_check_ring(L, 2);
  lua_settop(L, 2);                       /* the state goes at 3 */
  profstate *st = (profstate *)lua_newuserdatauv(L, sizeof *st, 4);
  memset(st, 0, sizeof *st);
  luaL_setmetatable(L, PL_PROFSTATE_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);            /* uv1: the event */
  lua_newtable(L);
  lua_setiuservalue(L, -2, 2);            /* uv2: samples by stack */
  if (!lua_isnoneornil(L, 2)) {
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, -2, 3);          /* uv3: the ring */
    st->native = 1;
  }
  st->open = 1;
  return 1;
}

/* st:start([level, extra]): frames at and below `level` of the caller
** (1 = the function calling start), plus `extra` frames above it, are not
** charged. */
static int state_start(lua_State *L) {
  profstate *st = check_state(L);
  if (!st->open) return luaL_error(L, "attempt to use a closed profiler");
  if (st->active) return luaL_error(L, "the profiler is already running");
  if (P.owner) return luaL_error(L, "another profiler is running: profilers do not nest (stop it first)");
  int skip = 0;
  if (!lua_isnoneornil(L, 2)) {
    lua_Integer level = luaL_checkinteger(L, 2), extra = luaL_optinteger(L, 3, 0);
    int depth = stack_depth(L);         /* level 0 is this C function */
    skip = (int)(depth - level + extra);
    if (level < 1 || level >= depth || skip < 0) return luaL_argerror(L, 2, "out of range");
  }
  int fd = event_fd(L, 1);
  int has_event = lua_getiuservalue(L, 1, 1) != LUA_TNIL;
  if (has_event && fd < 0) return luaL_error(L, "attempt to use a closed perf event");
  if (has_event && !pl_signal_set_callback(L, lua_gettop(L), on_overflow))
    return luaL_error(L, "the profiler's event has no overflow signal (call ev:notify() first)");
  lua_pop(L, 1);
  pl_ring *ring = NULL;
  if (lua_getiuservalue(L, 1, 3) == LUA_TUSERDATA) ring = pl_check_ring(L, -1);
  lua_pop(L, 1);
  /* records of overflows the last stop counted as lost are not this run's */
  if (ring && ring->base) pl_ring_set_tail(ring, pl_ring_head(ring));
  lua_pushthread(L);
  lua_setiuservalue(L, 1, 4);             /* uv4: keeps the thread alive */
  lua_getiuservalue(L, 1, 2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &P);
  const char *why = pl_arm_start(L, hook, state_start);   /* may raise: before the rest */
  P.owner = st;
  P.ring = ring;
  P.base = L;
  P.skip = skip;
  st->active = 1;
  if (has_event && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
    int err = errno;
    stop(L, 1, st);
    return pl_fail(L, err, "profiler: enable", NULL);
  }
  lua_pushboolean(L, 1);
  if (why) lua_pushfstring(L, "coroutines resumed by others and collector steps are not told apart: %s", why);
  else lua_pushnil(L);
  return 2;
}

static int state_stop(lua_State *L) {
  profstate *st = check_state(L);
  stop(L, 1, st);
  lua_pushboolean(L, 1);
  return 1;
}

/* st:result() -> samples, lost, stacks (the live table) */
static int state_result(lua_State *L) {
  profstate *st = check_state(L);
  lua_pushinteger(L, (lua_Integer)st->samples);
  lua_pushinteger(L, (lua_Integer)st->lost);
  lua_getiuservalue(L, 1, 2);
  return 3;
}

static int state_close(lua_State *L) {
  profstate *st = check_state(L);
  stop(L, 1, st);
  st->open = 0;
  return 0;
}

static int state_tostring(lua_State *L) {
  profstate *st = check_state(L);
  lua_pushfstring(L, "perf.profstate (%s, %I samples)",
                  st->active ? "running" : st->open ? "stopped" : "closed",
                  (lua_Integer)st->samples);
  return 1;
}

/* core.lua_layout([ident]) -> name, release | nil, why: the Lua 5.4.x
** layout (lua_layout.h) of the running Lua, checked against this thread;
** with ident, only the release number it names */
static int layout_info(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) {
    lua_pushinteger(L, pl_lua_release_of(luaL_checkstring(L, 1)));
    return 1;
  }
  int release = pl_lua_running_release();
  const pl_lua_layout *lo = pl_lua_layout_for(release);
  if (!lo) {
    lua_pushnil(L);
    lua_pushfstring(L, "no layout for Lua release %d", release);
    return 2;
  }
  lua_CFunction self = layout_info;
  uintptr_t f;
  memcpy(&f, &self, sizeof f);
  const char *why = pl_lua_layout_check(lo, L, f);
  if (why) {
    lua_pushnil(L);
    lua_pushfstring(L, "the Lua %s layout does not match this Lua (%s)", lo->name, why);
    return 2;
  }
  lua_pushstring(L, lo->name);
  lua_pushinteger(L, release);
  return 2;
}

/* core.profile_running() -> true while a profiler runs */
static int running(lua_State *L) {
  lua_pushboolean(L, P.owner != NULL);
  return 1;
}

/* core.profile_vm() -> the path of the object holding the Lua VM */
static int vm_path(lua_State *L) {
  Dl_info info;
  char exe[4096];
  if (!dladdr((void *)(uintptr_t)lua_sethook, &info) || !info.dli_fname) {
    lua_pushnil(L);
  } else if (strchr(info.dli_fname, '/')) {
    lua_pushstring(L, info.dli_fname);
  } else {                      /* the executable itself: dladdr gives argv[0] */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) lua_pushlstring(L, exe, (size_t)n); else lua_pushnil(L);
  }
  return 1;
}

static const luaL_Reg state_methods[] = {
  { "start", state_start },
  { "stop", state_stop },
  { "result", state_result },
  { "close", state_close },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "profile_state", state_new },
  { "profile_vm", vm_path },
  { "profile_running", running },
  { "lua_layout", layout_info },
  { NULL, NULL }
};

static const luaL_Reg state_meta[] = {
  { "__gc", state_close },
  { "__close", state_close },
  { "__tostring", state_tostring },
  { NULL, NULL }
};

void pl_open_profile(lua_State *L) {
  pl_new_metatable(L, PL_PROFSTATE_MT, state_meta, state_methods);
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
