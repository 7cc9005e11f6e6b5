/*
** ring.c: ev:mmap and the perf.ring handle (poll, lost, pending, attach,
** raw, close). The record iterators live in ring_iter.c.
**
** Ordering, as include/uapi/linux/perf_event.h asks: data_head is loaded
** with acquire ordering, the records up to it are read and turned into Lua
** values, and only then is data_tail stored with release ordering, so the
** kernel never overwrites a record that is still being read.
*/
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

/* ---- the handle ---- */

pl_ring *pl_test_ring(lua_State *L, int idx) {
  return (pl_ring *)luaL_testudata(L, idx, PL_RING_MT);
}

pl_ring *pl_to_ring(lua_State *L, int idx) {
  return (pl_ring *)luaL_checkudata(L, idx, PL_RING_MT);
}

pl_ring *pl_check_ring(lua_State *L, int idx) {
  pl_ring *r = pl_to_ring(L, idx);
  if (!r->base) luaL_error(L, "attempt to use a closed perf ring");
  if (r->owner != pl_self())
    luaL_error(L, "perf ring used in a forked child (mapped by pid %d): "
               "only the process that mapped it may consume it", (int)r->owner);
  return r;
}

/* Frees what the ring owns; safe to call twice, never raises. */
static void ring_release(pl_ring *r) {
  if (r->base) {
    if (r->maplen) munmap(r->base, r->maplen);
    else free(r->base);
  }
  r->base = NULL;
  r->meta = NULL;
  free(r->layouts);
  r->layouts = NULL;
  r->nlayouts = 0;
  free(r->rb.scratch);
  r->rb.scratch = NULL;
}

static int rb_close(lua_State *L) {
  ring_release(pl_to_ring(L, 1));
  lua_pushboolean(L, 1);
  return 1;
}

static int rb_gc(lua_State *L) {
  ring_release(pl_to_ring(L, 1));
  return 0;
}

static uint64_t ring_pending(const pl_ring *r) {
  if (r->backward) return pl_rbuf_backward_extent(&r->rb, pl_ring_head(r));
  return pl_ring_head(r) - pl_ring_tail(r);
}

static int kernel_lost(lua_State *L, pl_ring *r, uint64_t *sum);

/* Shows the loss rb:lost() knows: the kernel's count (PERF_FORMAT_LOST)
** where every event writing here has it, else the PERF_RECORD_LOST sum. */
static int rb_tostring(lua_State *L) {
  pl_ring *r = pl_to_ring(L, 1);
  if (!r->base) {
    lua_pushliteral(L, "perf.ring (closed)");
    return 1;
  }
  const char *name = "bytes";
  if (lua_getiuservalue(L, 1, 1) == LUA_TUSERDATA &&
      lua_getiuservalue(L, -1, 1) == LUA_TSTRING)
    name = lua_tostring(L, -1);
  if (!r->ev)
    lua_pushfstring(L, "perf.ring (%d bytes, %d pending)", (int)r->rb.size,
                    (int)ring_pending(r));
  else {
    uint64_t lost = r->lost, k;
    if (pl_ring_fd(r) >= 0 && kernel_lost(L, r, &k) && k > lost) lost = k;
    lua_pushfstring(L, "perf.ring \"%s\" (fd %d, %d pages%s, %I bytes pending, %I lost)",
                    name, pl_ring_fd(r), (int)r->pages,
                    r->backward ? ", overwrite" : "",
                    (lua_Integer)ring_pending(r), (lua_Integer)lost);
  }
  return 1;
}

/* ---- layouts ---- */

static int event_id(pl_event *ev, uint64_t *id) {
  if (ev->id == 0) {
    uint64_t v = 0;
    if (ioctl(ev->fd, PERF_EVENT_IOC_ID, &v) < 0) return errno;
    ev->id = v;
  }
  *id = ev->id;
  return 0;
}

void pl_layout_from_event(const pl_event *ev, pl_layout *l) {
  memset(l, 0, sizeof *l);
  l->sample_type = ev->attr.sample_type;
  l->read_format = ev->attr.read_format;
  l->branch_sample_type = ev->attr.branch_sample_type;
  l->regs_user = ev->attr.sample_regs_user;
  l->regs_intr = ev->attr.sample_regs_intr;
  l->sample_id_all = (int)PL_HAS(&ev->attr, PL_FLAG_SAMPLE_ID_ALL);
  l->id = ev->id;
  /* a dummy event counts nothing, an event without a period never
  ** overflows: neither writes samples */
  l->no_samples = (ev->attr.type == PERF_TYPE_SOFTWARE &&
                   ev->attr.config == PERF_COUNT_SW_DUMMY) ||
                  ev->attr.sample_period == 0;
}

/* Adds a layout; raises (leaving the ring as it was) if the events could
** no longer be told apart. */
static void ring_add_layout(lua_State *L, pl_ring *r, const pl_layout *l) {
  if (r->nlayouts >= PL_RING_MAXLAYOUTS)
    luaL_error(L, "too many events share this ring (at most %d)", PL_RING_MAXLAYOUTS);
  pl_layout *v = realloc(r->layouts, (r->nlayouts + 1) * sizeof *v);
  if (!v) luaL_error(L, "not enough memory");
  r->layouts = v;
  v[r->nlayouts] = *l;
  pl_layouts set;
  const char *why;
  if (pl_layouts_init(&set, v, r->nlayouts + 1, &why) != 0)
    luaL_error(L, "%s", why);
  r->nlayouts++;
  r->set = set;
}

/* ---- the event's ring (in the event's extension table) ---- */

/* The event's ring is held weakly (ext.ring[1]), so a ring the program
** drops can be collected: the event does not keep it alive. A header-only
** ring is also held strongly, as ext.userpage, by pl_ring_map. */
static void event_set_ring(lua_State *L, int evidx, int ringidx) {
  ringidx = lua_absindex(L, ringidx);
  pl_event_ext(L, evidx);
  if (lua_getfield(L, -1, "ring") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 1, 0);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "ring");
  }
  lua_pushvalue(L, ringidx);
  lua_rawseti(L, -2, 1);
  lua_pop(L, 2);
}

pl_ring *pl_event_ring(lua_State *L, int evidx) {
  pl_ring *r = NULL;
  int top = lua_gettop(L);
  pl_event_ext(L, evidx);
  if (lua_getfield(L, -1, "ring") == LUA_TTABLE &&
      lua_rawgeti(L, -1, 1) == LUA_TUSERDATA) {
    r = pl_to_ring(L, -1);
    if (!r->base) r = NULL;
  }
  if (!r) lua_pushnil(L);
  lua_copy(L, -1, top + 1);
  lua_settop(L, top + 1);
  return r;
}

/* ---- ev:mmap([pages]) ---- */

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

static long read_sysctl(const char *path) {
  FILE *f = fopen(path, "r");
  long v = -1;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* A "Field:   N kB" line of /proc/self/status, in KiB, or -1. */
static long status_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(field);
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, n)) {
      if (sscanf(line + n, "%ld", &v) != 1) v = -1;
      break;
    }
  fclose(f);
  return v;
}

static const char *mmap_hint(int err, const pl_event *ev, size_t pages,
                             char *buf, size_t len) {
  if (pages == 0)      /* the header page alone, for ev:userpage() */
    return err == EINVAL ? "an inherited per-task event on cpu -1 cannot be "
           "mapped; nor can an event whose output is redirected" : NULL;
  switch (err) {
  case EINVAL:
    if (PL_HAS(&ev->attr, PL_FLAG_INHERIT) && ev->cpu == -1)
      return "an inherited per-task event on cpu -1 cannot be mapped: open one "
             "event per CPU, as perf record does: require(\"perf.cpus\").open(spec, "
             "{ pid = ... })";
    return "the event's output is redirected elsewhere (set_output), or it is "
           "already mapped with another size";
  case EPERM: {
    /* perf_mmap (kernel/events/core.c): pages up to perf_event_mlock_kb
    ** per CPU are charged to the user; past that, to the process's pinned
    ** pages (VmPin), which RLIMIT_MEMLOCK bounds. */
    long kb = read_sysctl("/proc/sys/kernel/perf_event_mlock_kb");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pin_kb = status_kb("VmPin:");
    size_t psz = page_size(), fit = 0;
    struct rlimit rl;
    uint64_t user = kb > 0 ? (uint64_t)kb * 1024 / psz * (uint64_t)(cpus > 0 ? cpus : 1) : 0;
    uint64_t rlim = 0, pinned = pin_kb > 0 ? (uint64_t)pin_kb * 1024 / psz : 0, avail;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      rlim = (uint64_t)rl.rlim_cur / psz;
    /* pinned pages mean the user's share is used up already */
    avail = pinned ? (rlim > pinned ? rlim - pinned : 0) : user + rlim;
    while ((fit ? fit * 2 : 1) + 1 <= avail) fit = fit ? fit * 2 : 1;
    snprintf(buf, len, "%zu data pages exceed the locked-memory allowance "
             "(perf_event_mlock_kb = %ld KiB per CPU for the user, %lu pages on "
             "%ld CPUs; then RLIMIT_MEMLOCK = %lu pages for the process, %lu "
             "pinned already): %s%zu pages, or raise ulimit -l or "
             "/proc/sys/kernel/perf_event_mlock_kb",
             pages, kb, (unsigned long)user, cpus, (unsigned long)rlim,
             (unsigned long)pinned, fit ? "use at most " : "unmap other rings, ",
             fit);
    return buf;
  }
  case ENOMEM:
    snprintf(buf, len, "not enough memory for %zu pages: use fewer", pages);
    return buf;
  case EBADF:
    return "the event is closed";
  }
  return NULL;
}

int pl_ring_map(lua_State *L, int evidx, size_t pages) {
  evidx = lua_absindex(L, evidx);
  pl_event *ev = pl_check_event(L, evidx);
  if (ev->owner != pl_self())
    return luaL_error(L, "cannot map an event in a forked child");

  /* one ring per event: a second consumer would corrupt data_tail */
  pl_ring *old = pl_event_ring(L, evidx);
  if (old && old->pages > 0)
    return luaL_error(L, "this event already has a ring buffer (%s); "
                      "close it first", luaL_tolstring(L, -1, NULL));
  /* the header-only ring would pin the mapping's size: it gives way, and
  ** the new ring's header page serves self-monitoring from now on */
  if (old) ring_release(old);
  lua_pop(L, 1);

  uint64_t id;
  int err = event_id(ev, &id);
  if (err) return pl_fail(L, err, "mmap: PERF_EVENT_IOC_ID", NULL);

  pl_ring *r = lua_newuserdatauv(L, sizeof *r, 2);
  memset(r, 0, sizeof *r);
  luaL_setmetatable(L, PL_RING_MT);
  r->rb.scratch = malloc(PL_RBUF_SCRATCH);
  if (!r->rb.scratch) return luaL_error(L, "not enough memory");
  pl_layout l;
  pl_layout_from_event(ev, &l);
  ring_add_layout(L, r, &l);

  r->backward = (int)PL_HAS(&ev->attr, PL_FLAG_WRITE_BACKWARD);
  size_t psz = page_size();
  size_t len = (pages + 1) * psz;
  /* read-only is overwrite mode: the kernel ignores data_tail (a header
  ** page alone is only read) */
  int prot = PROT_READ | (r->backward || pages == 0 ? 0 : PROT_WRITE);
  void *p = mmap(NULL, len, prot, MAP_SHARED, ev->fd, 0);
  if (p == MAP_FAILED) {
    err = errno;
    char buf[320];
    const char *hint = mmap_hint(err, ev, pages, buf, sizeof buf);
    char what[64];
    if (pages == 0) snprintf(what, sizeof what, "userpage: mmap");
    else snprintf(what, sizeof what, "mmap %zu pages", pages);
    return pl_fail(L, err, what, hint);
  }
  r->base = p;
  r->maplen = len;
  r->meta = p;
  r->pages = pages;
  /* data_offset/data_size are set by kernels since 4.1; fall back to the
  ** page after the header */
  uint64_t off = r->meta->data_offset ? r->meta->data_offset : psz;
  uint64_t size = r->meta->data_size ? r->meta->data_size : (uint64_t)pages * psz;
  r->rb.data = (unsigned char *)p + off;
  r->rb.size = pages ? size : 0;
  r->ev = ev;
  r->owner = pl_self();

  lua_pushvalue(L, evidx);
  lua_setiuservalue(L, -2, 1);
  event_set_ring(L, evidx, -1);
  if (pages == 0) {
    pl_event_ext(L, evidx);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "userpage");
    lua_pop(L, 1);
  }
  return 1;
}

static int ev_mmap(lua_State *L) {
  pl_check_event(L, 1);
  lua_Integer pages = luaL_optinteger(L, 2, 8);
  if (pages < 1 || (pages & (pages - 1)) != 0 || pages > (1 << 24))
    return luaL_argerror(L, 2, lua_pushfstring(L,
        "pages must be a power of two (1, 2, 4, 8, ...), got %I; the ring "
        "maps one more page for its header", pages));
  return pl_ring_map(L, 1, (size_t)pages);
}

/* ---- perf.core.stream(bytes, layout...) ---- */

int pl_ring_from_bytes(lua_State *L, int bytes_idx, const pl_layout *lays,
                       size_t n) {
  size_t len;
  const char *s = luaL_checklstring(L, bytes_idx, &len);
  pl_ring *r = lua_newuserdatauv(L, sizeof *r, 2);
  memset(r, 0, sizeof *r);
  luaL_setmetatable(L, PL_RING_MT);
  uint64_t size = 64;
  while (size < len) size *= 2;
  r->rb.scratch = malloc(PL_RBUF_SCRATCH);
  unsigned char *copy = calloc(1, (size_t)size);
  if (!r->rb.scratch || !copy) {
    free(copy);
    return luaL_error(L, "not enough memory");
  }
  memcpy(copy, s, len);
  r->base = copy;
  r->maplen = 0;
  r->meta = &r->own;
  r->own.data_head = len;
  r->own.data_tail = 0;
  r->rb.data = copy;
  r->rb.size = size;
  r->owner = pl_self();
  for (size_t i = 0; i < n; i++) ring_add_layout(L, r, &lays[i]);
  return 1;
}

/* ---- rb:attach(ev) and ev:set_output(other) ---- */

/* 1 if the event at evidx is attached to the ring at ringidx already. */
static int attached(lua_State *L, int ringidx, int evidx) {
  int found = 0;
  if (lua_getiuservalue(L, ringidx, 2) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n && !found; i++) {
      lua_rawgeti(L, -1, i);
      found = lua_rawequal(L, -1, evidx);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return found;
}

/* Sends the records of the event at evidx to the ring at ringidx and
** decodes them there by id. `what` and the hint name the failed ioctl. */
static int attach(lua_State *L, int ringidx, int evidx, const char *what,
                  const char *einval_hint) {
  ringidx = lua_absindex(L, ringidx);
  evidx = lua_absindex(L, evidx);
  pl_ring *r = pl_check_ring(L, ringidx);
  pl_event *ev = pl_check_event(L, evidx);
  if (!r->ev) return luaL_error(L, "this ring is not mapped from an event");
  if (r->ev->fd < 0) return luaL_error(L, "the ring's event is closed");
  if (ev == r->ev) return luaL_argerror(L, evidx, "the ring's own event");
  uint64_t id;
  int err = event_id(ev, &id);
  if (err) return pl_fail(L, err, "attach: PERF_EVENT_IOC_ID", NULL);
  int known = attached(L, ringidx, evidx);
  size_t before = r->nlayouts;
  if (!known) {
    pl_layout l;
    pl_layout_from_event(ev, &l);
    ring_add_layout(L, r, &l);     /* raises if ids could not be told apart */
  }
  if (ioctl(ev->fd, PERF_EVENT_IOC_SET_OUTPUT, r->ev->fd) < 0) {
    err = errno;
    r->nlayouts = before;
    const char *why;
    pl_layouts_init(&r->set, r->layouts, r->nlayouts, &why);
    return pl_fail(L, err, what, err == EINVAL ? einval_hint : NULL);
  }
  if (!known) {
    if (lua_getiuservalue(L, ringidx, 2) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setiuservalue(L, ringidx, 2);
    }
    lua_pushvalue(L, evidx);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int rb_attach(lua_State *L) {
  return attach(L, 1, 2, "attach: PERF_EVENT_IOC_SET_OUTPUT",
                "both events must be on the same CPU (or the same task when "
                "cpu is -1) and use the same clock");
}

/* perf.open's flag fd_output (pl_output_fn): the kernel sends the records
** of the event at evidx to the ring of the event at toidx. When that ring
** is mapped, it decodes them by id from now on, as after rb:attach.
** Returns 0 (nothing pushed), or pushes nil, msg, errno and returns 3. */
static int ring_follow(lua_State *L, int evidx, int toidx) {
  evidx = lua_absindex(L, evidx);
  int top = lua_gettop(L);
  if (!pl_event_ring(L, toidx)) {
    lua_settop(L, top);
    return 0;
  }
  int n = attach(L, -1, evidx, "perf.open: PERF_EVENT_IOC_SET_OUTPUT", NULL);
  if (n == 1) {
    lua_settop(L, top);
    return 0;
  }
  return n;
}

/* ev:set_output(other | nil): send this event's records to other's ring.
** When other has a ring mapped here, that ring decodes them by id, as
** rb:attach does; the ioctl alone otherwise. */
static int ev_set_output(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  long target = -1;     /* the kernel compares the whole argument with -1 */
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, 1);
  const char *what = lua_pushfstring(L, "ev:set_output \"%s\"", lua_tostring(L, -1));
  if (!lua_isnil(L, 2)) {
    pl_event *to = pl_check_event(L, 2);
    target = to->fd;
    if (to != ev && pl_event_ring(L, 2))
      return attach(L, -1, 1, what, "both events must be on the same cpu, or "
                    "the same task for cpu -1, and use the same clock");
    lua_pop(L, 1);
  }
  if (ioctl(ev->fd, PERF_EVENT_IOC_SET_OUTPUT, target) != 0) {
    int err = errno;
    return pl_fail(L, err, what, err == EINVAL && target == ev->fd ?
                "an event cannot send its records to itself" : err == EINVAL ?
                "the target must be mapped (ev:mmap) and on the same cpu, or the same task for cpu -1" :
                err == EBUSY ? "this event already has its own ring mapped" : NULL);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- reading ---- */

int pl_ring_read(lua_State *L, pl_ring *r, uint64_t head, pl_record *rec,
                 int *status, const char **why) {
  uint64_t tail = pl_ring_tail(r);
  const unsigned char *p;
  size_t len;
  int rc = pl_rbuf_next(&r->rb, head, tail, &p, &len);
  if (rc == PL_RBUF_EMPTY) return 0;
  if (rc < 0) {
    /* nothing after a bad header can be framed: skip what is published */
    pl_ring_set_tail(r, head);
    return luaL_error(L, "perf ring: %s (at byte %I, size %I); the unread "
                      "%I bytes were discarded", pl_rbuf_strerror(rc),
                      (lua_Integer)tail, (lua_Integer)len,
                      (lua_Integer)(head - tail));
  }
  const char *lwhy = NULL, *dwhy = NULL;
  const pl_layout *lay = pl_layouts_find(&r->set, p, len, &lwhy);
  *status = pl_decode(p, len, lay, rec, &dwhy);
  *why = dwhy ? dwhy : lwhy;
  return 1;
}

void pl_ring_consume(pl_ring *r, const pl_record *rec) {
  /* lost counts come from the fixed bodies, whatever the layout */
  if (rec->type == PL_REC_LOST && rec->avail >= 24)
    r->lost += pl_u64at(rec->p + 16);
  else if (rec->type == PL_REC_LOST_SAMPLES && rec->avail >= 16)
    r->lost_samples += pl_u64at(rec->p + 8);
  r->records++;
  pl_ring_set_tail(r, pl_ring_tail(r) + rec->size);
}

/* rb:raw() -> the unread bytes as one string, consumed. */
static int rb_raw(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);
  if (r->backward) return luaL_error(L, "rb:raw() reads a forward ring; this one is in overwrite mode (use rb:snapshot())");
  uint64_t head = pl_ring_head(r), tail = pl_ring_tail(r);
  if (head - tail > r->rb.size) {
    pl_ring_set_tail(r, head);
    return luaL_error(L, "perf ring: %s", pl_rbuf_strerror(PL_RBUF_ESYNC));
  }
  size_t n = (size_t)(head - tail);
  luaL_Buffer b;
  char *dst = luaL_buffinitsize(L, &b, n);
  pl_rbuf_copy(&r->rb, tail, dst, n);
  luaL_pushresultsize(&b, n);
  pl_ring_set_tail(r, head);
  return 1;
}

/* ---- waiting ---- */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int push_hangup(lua_State *L) {
  lua_pushnil(L);
  lua_pushliteral(L, "hangup");
  return 2;
}

static int any_pending(pl_ring **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!v[i]->backward && ring_pending(v[i])) return 1;
  return 0;
}

/* Latches hangups (POLLHUP earlier, or an exhausted refresh count seen by
** the overflow signal handler) and returns 1 when every ring has one. */
static int all_hung_up(pl_ring **v, size_t n) {
  size_t hung = 0;
  for (size_t i = 0; i < n; i++) {
    int fd = pl_ring_fd(v[i]);       /* a byte stream or a closed event ends */
    if (fd < 0 || pl_signal_exhausted(fd)) v[i]->hup = 1;
    hung += v[i]->hup != 0;
  }
  return hung == n;
}

#define POLL_MAX 1024

/* Waits until one of the rings has data: true, false on timeout,
** nil, "hangup" when none can produce more, or nil, msg, errno. */
static int poll_rings(lua_State *L, pl_ring **v, size_t n, lua_Integer timeout) {
  struct pollfd pfd[POLL_MAX];
  if (timeout < -1 || timeout > 0x7fffffff)
    return luaL_error(L, "timeout must be -1 (forever) or 0 .. 2^31-1 ms");
  /* in ns, so a wait cut short by a signal resumes for what is left,
  ** rounded up to whole ms: never returns before the timeout */
  int64_t deadline = timeout >= 0 ? now_ns() + timeout * 1000000 : -1;
  for (;;) {
    if (any_pending(v, n)) { lua_pushboolean(L, 1); return 1; }
    if (all_hung_up(v, n)) return push_hangup(L);
    nfds_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (!v[i]->hup) {
        pfd[k].fd = pl_ring_fd(v[i]);
        pfd[k].events = POLLIN;
        pfd[k].revents = 0;
        k++;
      }
    int wait = -1;
    if (deadline >= 0) {
      int64_t left = deadline - now_ns();
      wait = left > 0 ? (int)((left + 999999) / 1000000) : 0;
    }
    int rc = poll(pfd, k, wait);
    if (rc < 0) {
      int err = errno;
      if (err == EINTR) continue;   /* e.g. an overflow signal: look again */
      return pl_fail(L, err, "poll", NULL);
    }
    for (nfds_t j = 0; j < k; j++) {
      if (pfd[j].revents & (POLLERR | POLLNVAL))
        return pl_fail(L, EBADF, "poll", "the event's file is no longer valid");
      if (pfd[j].revents & POLLHUP)
        for (size_t i = 0; i < n; i++)
          if (pl_ring_fd(v[i]) == pfd[j].fd) v[i]->hup = 1;
    }
    /* POLLIN may come with an empty ring: wait on unless data is there */
    if (any_pending(v, n)) { lua_pushboolean(L, 1); return 1; }
    if (deadline >= 0 && now_ns() >= deadline) {
      if (all_hung_up(v, n)) return push_hangup(L);
      lua_pushboolean(L, 0);
      return 1;
    }
  }
}

/* rb:poll([timeout_ms]) -> true | false | nil, "hangup" | nil, msg, errno */
static int rb_poll(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);
  return poll_rings(L, &r, 1, luaL_optinteger(L, 2, -1));
}

/* perf.core.poll(rings [, timeout_ms]): rb:poll over several rings */
static int l_poll(lua_State *L) {
  pl_ring *v[POLL_MAX];
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t n = (size_t)lua_rawlen(L, 1);
  luaL_argcheck(L, n >= 1 && n <= POLL_MAX, 1, "1 to 1024 rings expected");
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 1, (lua_Integer)i + 1);
    v[i] = pl_check_ring(L, -1);
    lua_pop(L, 1);
  }
  return poll_rings(L, v, n, luaL_optinteger(L, 2, -1));
}

/* ---- accounting ---- */

/* Sum of PERF_FORMAT_LOST over the events writing here, if they all have it. */
static int kernel_lost(lua_State *L, pl_ring *r, uint64_t *sum) {
  *sum = 0;
  int n = 0;
  if (lua_getiuservalue(L, 1, 1) == LUA_TUSERDATA) {
    pl_event *ev = pl_test_event(L, -1);
    if (!ev || ev->fd < 0 || !(ev->attr.read_format & PERF_FORMAT_LOST)) {
      lua_pop(L, 1);
      return 0;
    }
    uint64_t v, e, run, lost;
    if (pl_event_read(ev, &v, &e, &run, &lost) != 0) { lua_pop(L, 1); return 0; }
    *sum += lost;
    n++;
  }
  lua_pop(L, 1);
  if (lua_getiuservalue(L, 1, 2) == LUA_TTABLE) {
    lua_Integer k = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= k; i++) {
      lua_rawgeti(L, -1, i);
      pl_event *ev = pl_test_event(L, -1);
      uint64_t v, e, run, lost;
      if (!ev || ev->fd < 0 || !(ev->attr.read_format & PERF_FORMAT_LOST) ||
          pl_event_read(ev, &v, &e, &run, &lost) != 0) {
        lua_pop(L, 2);
        return 0;
      }
      *sum += lost;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  (void)r;
  return n > 0;
}

/* rb:lost() -> sum of PERF_RECORD_LOST, kernel count (PERF_FORMAT_LOST) or
** nil, sum of PERF_RECORD_LOST_SAMPLES */
static int rb_lost(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);
  uint64_t k;
  lua_pushinteger(L, (lua_Integer)r->lost);
  if (kernel_lost(L, r, &k)) lua_pushinteger(L, (lua_Integer)k);
  else lua_pushnil(L);
  lua_pushinteger(L, (lua_Integer)r->lost_samples);
  return 3;
}

static int rb_pending(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);
  lua_pushinteger(L, (lua_Integer)ring_pending(r));
  return 1;
}

/* rb:stats() -> table: records consumed, lost, size, pages, head, tail */
static int rb_stats(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);
  lua_createtable(L, 0, 8);
  pl_show(L, -1, "perf.ring.stats");
  lua_pushinteger(L, (lua_Integer)r->records); lua_setfield(L, -2, "records");
  lua_pushinteger(L, (lua_Integer)r->lost); lua_setfield(L, -2, "lost");
  lua_pushinteger(L, (lua_Integer)r->lost_samples); lua_setfield(L, -2, "lost_samples");
  lua_pushinteger(L, (lua_Integer)r->rb.size); lua_setfield(L, -2, "size");
  lua_pushinteger(L, (lua_Integer)r->pages); lua_setfield(L, -2, "pages");
  lua_pushinteger(L, (lua_Integer)pl_ring_head(r)); lua_setfield(L, -2, "head");
  lua_pushinteger(L, (lua_Integer)pl_ring_tail(r)); lua_setfield(L, -2, "tail");
  lua_pushboolean(L, r->backward); lua_setfield(L, -2, "overwrite");
  return 1;
}

/* rb:event() -> the perf.event it maps (nil for a byte stream) */
static int rb_event(lua_State *L) {
  pl_check_ring(L, 1);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

/* ---- registration ---- */

static const luaL_Reg ring_methods[] = {
  { "poll", rb_poll },
  { "lost", rb_lost },
  { "pending", rb_pending },
  { "attach", rb_attach },
  { "raw", rb_raw },
  { "stats", rb_stats },
  { "event", rb_event },
  { "close", rb_close },
  { NULL, NULL }
};

static const luaL_Reg ring_meta[] = {
  { "__gc", rb_gc },
  { "__close", rb_gc },
  { "__tostring", rb_tostring },
  { NULL, NULL }
};

static const luaL_Reg event_methods[] = {
  { "mmap", ev_mmap },
  { "set_output", ev_set_output },
  { NULL, NULL }
};


static const luaL_Reg functions[] = {
  { "poll", l_poll },
  { NULL, NULL }
};

void pl_open_ring(lua_State *L) {
  pl_new_metatable(L, PL_RING_MT, ring_meta, ring_methods);
  lua_pop(L, 1);
  pl_add_methods(L, PL_EVENT_MT, event_methods);
  pl_event_on_output(ring_follow);
  luaL_setfuncs(L, functions, 0);
}
