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
** Lua function, "C" name for a C function, "N" hex address for a native
** frame), value = samples.
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

#define PL_PROFSTATE_MT "perf.profstate"
#define MAXFRAMES 256           /* Lua and C frames kept per sample */
#define MAXNATIVE 64            /* native frames kept per sample */
#define MAXLINKS 256            /* nested resumes followed */
#define MAXREAD 17              /* group values kept per sample: leader + 16 */

typedef struct profstate {
  int open;
  int active;
  int native;
  uint64_t samples;             /* overflows charged */
  uint64_t lost;                /* overflows counted but not charged */
} profstate;

typedef struct resume_link {
  lua_State *co, *from;
} resume_link;

static struct {
  _Atomic(lua_State *) current; /* the thread to arm, NULL when idle */
  atomic_ulong pending;         /* overflows not charged yet */
  _Atomic(lua_State *) saved_L; /* a thread whose own hook was displaced */
  lua_Hook saved_hook;
  int saved_mask, saved_count;
  profstate *owner;             /* the running profiler, NULL when idle */
  pl_profile_weigh_fn weigh;    /* the weight of charged samples (NULL: 1 each) */
  pl_profile_charge_fn on_charge; /* called with each key charged, or NULL */
  int charging;                 /* the hook is charging (its allocations are its own) */
  pl_ring *ring;                /* its ring (native frames, group values) */
  int nread;                    /* group values of the sample being charged */
  uint64_t read_value[MAXREAD], read_id[MAXREAD];
  lua_State *base;              /* thread that started */
  int skip;                     /* root frames of `base` not charged */
  unsigned gen;                 /* start count, to match resume links */
  int nlinks;
  resume_link links[MAXLINKS];
} P;

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "the current thread must be lock-free");

static void hook(lua_State *L, lua_Debug *ar);

#define HOOKMASK (LUA_MASKCOUNT | LUA_MASKCALL | LUA_MASKRET)

/* Sets our hook on L, keeping a hook the program had set there (signal
** handler and hook both call it). */
static void arm(lua_State *L) {
  lua_Hook h = lua_gethook(L);
  if (h == hook) return;
  if (h && atomic_load(&P.saved_L) == NULL) {
    P.saved_hook = h;
    P.saved_mask = lua_gethookmask(L);
    P.saved_count = lua_gethookcount(L);
    atomic_store(&P.saved_L, L);
  }
  lua_sethook(L, hook, HOOKMASK, 1);
}

/* Removes our hook from L, giving back the program's own. */
static void disarm(lua_State *L) {
  if (lua_gethook(L) != hook) return;
  if (atomic_load(&P.saved_L) == L) {
    lua_Hook h = P.saved_hook;
    int mask = P.saved_mask, count = P.saved_count;
    atomic_store(&P.saved_L, NULL);
    lua_sethook(L, h, mask, count);
  } else {
    lua_sethook(L, NULL, 0, 0);
  }
}

/* In the signal handler: async-signal-safe. */
static void on_overflow(void) {
  lua_State *L = atomic_load(&P.current);
  if (!L) return;
  atomic_fetch_add(&P.pending, 1);
  arm(L);
}

/* ---- for the files that extend the profiler (profile.h) ---- */

void pl_profile_overflow(void) { on_overflow(); }

void pl_profile_add(unsigned long n) {
  lua_State *L = atomic_load(&P.current);
  if (!L || n == 0) return;
  atomic_fetch_add(&P.pending, n);
  arm(L);
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

/* Adds the frames of T from level `from` (leaf first) to b; leading C
** frames are dropped when `trim`. Returns the frames added. */
static int add_frames(lua_State *T, int from, int trim, int budget, luaL_Buffer *b) {
  lua_Debug ar;
  int until = -1, added = 0;
  /* the profiler's frames under the profiled function; while the profiler
  ** itself runs (starting, stopping), all of them: none is charged */
  if (T == P.base && P.skip > 0) {
    until = stack_depth(T) - P.skip;
    if (until < 0) until = 0;
  }
  for (int level = from; added < budget && lua_getstack(T, level, &ar); level++) {
    if (until >= 0 && level >= until) break;
    if (!lua_getinfo(T, "Sln", &ar)) break;
    int c = ar.what[0] == 'C';
    if (c && trim) continue;
    trim = 0;
    char num[48];
    if (c) {
      luaL_addchar(b, 'C');
      luaL_addstring(b, ar.name ? ar.name : "?");
    } else {
      luaL_addchar(b, 'L');
      luaL_addstring(b, ar.what[0] == 'm' ? "main chunk" : ar.name ? ar.name : "");
      luaL_addchar(b, '\t');
      luaL_addstring(b, ar.short_src);
      snprintf(num, sizeof num, "\t%d\t%d", ar.linedefined, ar.currentline);
      luaL_addstring(b, num);
    }
    luaL_addchar(b, '\n');
    added++;
  }
  return added;
}

/* The thread that resumed T through the wrappers, or NULL. */
static lua_State *resumer_of(lua_State *T) {
  for (int i = P.nlinks - 1; i >= 0; i--)
    if (P.links[i].co == T) return P.links[i].from;
  return NULL;
}

/* Pushes the Lua part of the stack key for the thread L the hook runs on. */
static void push_lua_stack(lua_State *L, int event) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  /* a call hook runs in the callee before its first instruction: the
  ** sample belongs to the caller */
  int from = event == LUA_HOOKCALL ? 1 : 0, budget = MAXFRAMES;
  int guard = 0;
  for (lua_State *T = L; T && budget > 0 && guard <= MAXLINKS; T = resumer_of(T), guard++) {
    budget -= add_frames(T, from, 1, budget, &b);
    from = 0;
  }
  luaL_pushresult(&b);
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

static void charge(lua_State *L, int event, unsigned long n) {
  if (!lua_checkstack(L, 6)) return;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &P) != LUA_TTABLE) { lua_pop(L, 1); return; }
  int stacks = lua_gettop(L);
  push_lua_stack(L, event);
  int luakey = lua_gettop(L);
  uint64_t lost = 0;
  for (unsigned long i = 0; i < n; ) {
    unsigned long k = n - i;          /* samples charged to this key */
    if (P.ring && P.ring->base) {
      uint64_t ips[MAXNATIVE];
      int m = next_sample(P.ring, ips, MAXNATIVE, &lost);
      if (m >= 0) k = 1;
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (int j = 0; j < m; j++) {
        char hex[24];
        snprintf(hex, sizeof hex, "N%llx\n", (unsigned long long)ips[j]);
        luaL_addstring(&b, hex);
      }
      lua_pushvalue(L, luakey);
      luaL_addvalue(&b);
      luaL_pushresult(&b);
    } else {
      lua_pushvalue(L, luakey);
    }
    if (P.on_charge) P.on_charge(L, lua_gettop(L));
    P.nread = 0;
    lua_pushvalue(L, -1);
    lua_Integer have = lua_rawget(L, stacks) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    lua_pushinteger(L, have + (P.weigh ? P.weigh(k) : (lua_Integer)k));
    lua_rawset(L, stacks);
    if (P.owner) P.owner->samples += k;
    i += k;
  }
  lua_settop(L, stacks - 1);
}

static void hook(lua_State *L, lua_Debug *ar) {
  unsigned long n = atomic_exchange(&P.pending, 0);
  if (n && P.owner) { P.charging = 1; charge(L, ar->event, n); P.charging = 0; }
  disarm(L);
  /* an overflow that came while charging arms the hook again */
  if (atomic_load(&P.pending) && atomic_load(&P.current) == L) arm(L);
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
  lua_State *cur = atomic_exchange(&P.current, NULL);
  st->lost += atomic_exchange(&P.pending, 0);
  if (cur) disarm(cur);
  if (P.base) disarm(P.base);
  disarm(L);
  st->active = 0;
  P.owner = NULL;
  P.ring = NULL;
  P.base = NULL;
  P.nlinks = 0;
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
  P.owner = st;
  P.ring = ring;
  P.base = L;
  P.skip = skip;
  P.gen++;
  P.nlinks = 0;
  atomic_store(&P.pending, 0);
  st->active = 1;
  atomic_store(&P.current, L);
  if (has_event && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
    int err = errno;
    stop(L, 1, st);
    return pl_fail(L, err, "profiler: enable", NULL);
  }
  lua_pushboolean(L, 1);
  return 1;
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

/* ---- following coroutines ---- */

static int enter(lua_State *co, lua_State *from) {
  if (!P.owner || P.nlinks >= MAXLINKS) return -1;
  P.links[P.nlinks].co = co;
  P.links[P.nlinks].from = from;
  P.nlinks++;
  atomic_store(&P.current, co);
  return P.nlinks - 1;
}

static void leave(int slot, unsigned gen, lua_State *from) {
  if (slot < 0 || gen != P.gen || !P.owner || slot != P.nlinks - 1) return;
  P.nlinks--;
  atomic_store(&P.current, from);
  /* an overflow while the coroutine was suspending armed it, not us */
  if (atomic_load(&P.pending)) arm(from);
}

/* Calls the function at index 1 with the rest as arguments, with `co` as
** the running thread; returns what it returns, or raises what it raised. */
static int call_in(lua_State *L, lua_State *co) {
  unsigned gen = P.gen;
  int slot = enter(co, L);
  int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
  leave(slot, gen, L);
  if (status != LUA_OK) return lua_error(L);
  return lua_gettop(L);
}

/* coroutine.resume while profiling; upvalue 1: the original */
static int co_resume(lua_State *L) {
  lua_State *co = lua_tothread(L, 1);
  luaL_argexpected(L, co, 1, "coroutine");
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  return call_in(L, co);
}

/* the function coroutine.wrap returns while profiling; upvalues: the
** coroutine, the original resume. Errors are raised as lcorolib's
** auxwrap raises them. */
static int co_wrapped(lua_State *L) {
  lua_State *co = lua_tothread(L, lua_upvalueindex(1));
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_insert(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 2);
  int n = call_in(L, co);
  if (lua_toboolean(L, 1)) return n - 1;
  int stat = lua_status(co);
  if (stat != LUA_OK && stat != LUA_YIELD) {      /* error in the coroutine */
#if LUA_VERSION_RELEASE_NUM >= 50406
    stat = lua_closethread(co, L);
#else
    stat = lua_resetthread(co);
#endif
    lua_xmove(co, L, 1);
  }
  if (stat != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

/* coroutine.wrap while profiling; upvalues: coroutine.create, the
** original resume */
static int co_wrap(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  luaL_checktype(L, -1, LUA_TTHREAD);
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_pushcclosure(L, co_wrapped, 2);
  return 1;
}

/* core.profile_resume(resume) */
static int make_resume(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  lua_pushcclosure(L, co_resume, 1);
  return 1;
}

/* core.profile_wrap(create, resume) */
static int make_wrap(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  lua_pushcclosure(L, co_wrap, 2);
  return 1;
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
  { "profile_resume", make_resume },
  { "profile_wrap", make_wrap },
  { "profile_vm", vm_path },
  { "profile_running", running },
  { NULL, NULL }
};

void pl_open_profile(lua_State *L) {
  if (luaL_newmetatable(L, PL_PROFSTATE_MT)) {
    luaL_newlib(L, state_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, state_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, state_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, state_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
