/*
** userpage.c: the self-monitoring page (struct perf_event_mmap_page).
**
**   ev:userpage() -> table     its fields, read under the page's seqlock
**   ev:userread() -> value, time_enabled, time_running, "rdpmc" | "read"
**
** The page is the header page of the event's ring: the one the program
** mapped with ev:mmap, or else a ring of no data pages made here (as
** libperf's mmap serves its self-read), which ev:mmap replaces with the
** program's ring since the kernel accepts one size of mapping per event.
**
** userread follows the recipe in include/uapi/linux/perf_event.h: under
** the seqlock, take offset + rdpmc(index - 1) sign-extended from
** pmc_width, and extend time_enabled/time_running with the TSC when
** cap_user_time says how. When cap_user_rdpmc is clear or index is 0 (a
** software event, or not scheduled), it reads with read(2) instead.
*/
#include "ring.h"

/* The event's header page, mapping a header-only ring if needed; NULL
** after pushing nil, msg, errno (3 values) on failure. Leaves the stack as
** it was otherwise (the event keeps its ring alive). */
static volatile struct perf_event_mmap_page *page_of(lua_State *L, int evidx,
                                                     int *nret) {
  int top = lua_gettop(L);
  pl_check_event(L, evidx);
  pl_ring *r = pl_event_ring(L, evidx);
  lua_settop(L, top);
  if (!r) {
    int n = pl_ring_map(L, evidx, 0);
    if (n != 1) {
      *nret = n;
      return NULL;
    }
    r = pl_to_ring(L, -1);
    lua_settop(L, top);
  }
  return r->meta;
}

#define BARRIER() __atomic_signal_fence(__ATOMIC_SEQ_CST)

static uint32_t lock_of(volatile struct perf_event_mmap_page *pg) {
  return __atomic_load_n(&pg->lock, __ATOMIC_ACQUIRE);
}

static void set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

/* ev:userpage() */
static int ev_userpage(lua_State *L) {
  int nret = 0;
  volatile struct perf_event_mmap_page *pg = page_of(L, 1, &nret);
  if (!pg) return nret;
  struct perf_event_mmap_page c;
  uint32_t seq;
  do {
    seq = lock_of(pg);
    BARRIER();
    c.version = pg->version;
    c.compat_version = pg->compat_version;
    c.index = pg->index;
    c.offset = pg->offset;
    c.time_enabled = pg->time_enabled;
    c.time_running = pg->time_running;
    c.capabilities = pg->capabilities;
    c.pmc_width = pg->pmc_width;
    c.time_shift = pg->time_shift;
    c.time_mult = pg->time_mult;
    c.time_offset = pg->time_offset;
    c.time_zero = pg->time_zero;
    c.size = pg->size;
    c.time_cycles = pg->time_cycles;
    c.time_mask = pg->time_mask;
    BARRIER();
  } while (lock_of(pg) != seq);
  lua_createtable(L, 0, 24);
  pl_show(L, -1, "perf.userpage");
  set_int(L, "version", c.version);
  set_int(L, "compat_version", c.compat_version);
  set_int(L, "lock", seq);
  set_int(L, "index", c.index);
  set_int(L, "offset", (uint64_t)c.offset);
  set_int(L, "time_enabled", c.time_enabled);
  set_int(L, "time_running", c.time_running);
  set_int(L, "capabilities", c.capabilities);
  lua_pushboolean(L, c.cap_user_rdpmc); lua_setfield(L, -2, "cap_user_rdpmc");
  lua_pushboolean(L, c.cap_user_time); lua_setfield(L, -2, "cap_user_time");
  lua_pushboolean(L, c.cap_user_time_zero); lua_setfield(L, -2, "cap_user_time_zero");
  lua_pushboolean(L, c.cap_user_time_short); lua_setfield(L, -2, "cap_user_time_short");
  set_int(L, "pmc_width", c.pmc_width);
  set_int(L, "time_shift", c.time_shift);
  set_int(L, "time_mult", c.time_mult);
  set_int(L, "time_offset", c.time_offset);
  set_int(L, "time_zero", c.time_zero);
  set_int(L, "time_cycles", c.time_cycles);
  set_int(L, "time_mask", c.time_mask);
  set_int(L, "size", c.size);
  return 1;
}

#if defined(__x86_64__) || defined(__i386__)
static uint64_t rdpmc(uint32_t counter) {
  uint32_t lo, hi;
  __asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
  return (uint64_t)hi << 32 | lo;
}
static uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t)hi << 32 | lo;
}
#define HAVE_RDPMC 1
#else
#define HAVE_RDPMC 0
#endif

/* ev:userread() */
static int ev_userread(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  int nret = 0;
  volatile struct perf_event_mmap_page *pg = page_of(L, 1, &nret);
  if (!pg) return nret;
#if HAVE_RDPMC
  uint64_t count, enabled, running;
  uint32_t seq, idx;
  int used = 0;
  do {
    seq = lock_of(pg);
    BARRIER();
    enabled = pg->time_enabled;
    running = pg->time_running;
    idx = pg->index;
    count = (uint64_t)pg->offset;
    used = 0;
    if (pg->cap_user_rdpmc && idx) {
      uint16_t width = pg->pmc_width;
      uint64_t pmc = rdpmc(idx - 1);
      if (width > 0 && width < 64) {
        pmc <<= 64 - width;
        pmc = (uint64_t)((int64_t)pmc >> (64 - width));
      }
      count += pmc;
      if (pg->cap_user_time && enabled != running) {
        uint64_t cyc = rdtsc();
        uint16_t shift = pg->time_shift;
        uint32_t mult = pg->time_mult;
        uint64_t offset = pg->time_offset;
        if (pg->cap_user_time_short)
          cyc = pg->time_cycles + ((cyc - pg->time_cycles) & pg->time_mask);
        uint64_t quot = cyc >> shift;
        uint64_t rem = cyc & (((uint64_t)1 << shift) - 1);
        uint64_t delta = offset + quot * mult + ((rem * mult) >> shift);
        enabled += delta;
        running += delta;
      }
      used = 1;
    }
    BARRIER();
  } while (lock_of(pg) != seq);
  if (used) {
    lua_pushinteger(L, (lua_Integer)count);
    lua_pushinteger(L, (lua_Integer)enabled);
    lua_pushinteger(L, (lua_Integer)running);
    lua_pushliteral(L, "rdpmc");
    return 4;
  }
#endif
  uint64_t value, en, run, lost;
  int err = pl_event_read(ev, &value, &en, &run, &lost);
  if (err) return pl_fail(L, err, "userread: read", NULL);
  lua_pushinteger(L, (lua_Integer)value);
  lua_pushinteger(L, (lua_Integer)en);
  lua_pushinteger(L, (lua_Integer)run);
  lua_pushliteral(L, "read");
  return 4;
}

static const luaL_Reg event_methods[] = {
  { "userpage", ev_userpage },
  { "userread", ev_userread },
  { NULL, NULL }
};

void pl_open_userpage(lua_State *L) {
  pl_add_methods(L, PL_EVENT_MT, event_methods);
}
