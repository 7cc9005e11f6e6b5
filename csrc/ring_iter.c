/*
** ring_iter.c: the record iterators.
**
**   for rec in rb:records([t]) do ... end        records available now
**   for ip, tid in rb:samples("ip", "tid") do    their samples, as values
**   for rec in rb:snapshot([t]) do ... end       overwrite ring, newest first
**   for rec in perf.core.merge(rings [, t]) do   several rings, time order
**   for ip in perf.core.merge(rings, "ip") do    ... as values
**
** Each is a Lua 5.4 generic for: iterator function, state, nil, and the
** state again as the closing value, so `break` closes the iterator. The
** iterator checks on every call that it and its rings are open and that
** the process is the one that mapped them; errors are raised (a generic
** for would drop an error return).
**
** records() reads data_head once, when the loop starts, so a busy event
** cannot keep a loop running forever. Each record is decoded and pushed,
** and only then is data_tail advanced past it.
**
** Two ways around building a table per record:
** - a reused table: given a table t, every record is written into t
**   (keys the previous record set and this one does not are cleared), and
**   t is what the loop receives. Nested values are still fresh tables.
** - values: samples(field, ...) yields the named sample fields as plain
**   values, nothing allocated. Other records are consumed on the way (lost
**   counts still add up in rb:lost()); a sample that does not decode
**   raises.
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "ring.h"

#define PL_ITER_MT "perf.ring.iter"

enum { IT_RECORDS, IT_SNAPSHOT, IT_MERGE };

#define MAX_FIELDS 16

typedef struct pl_iter {
  int kind;
  int nfields;                  /* > 0: yield these sample fields as values */
  unsigned char fields[MAX_FIELDS];
  int done;                     /* reached its end, or closed */
  int closed;                   /* closed by break, __close or __gc */
  int reuse;                    /* uv2 is the table to refill */
  pl_keyset keys;
  pl_ring *ring;                /* records, snapshot: the ring (uv1) */
  uint64_t head;                /* records: data_head when the loop began */
  const unsigned char *snap;    /* snapshot: the copy (uv3) */
  size_t snap_len, snap_off;
  size_t n;                     /* merge: rings (uv1 is their list) */
  struct merge_slot *slots;     /* merge: in the userdata, after pl_iter */
} pl_iter;

typedef struct merge_slot {
  pl_ring *ring;
  uint64_t head;
  uint64_t time;                /* time of the next record, when peeked */
  int peeked;                   /* 1: time valid; -1: ring at its head */
} merge_slot;

static pl_iter *check_iter(lua_State *L, int idx) {
  return (pl_iter *)luaL_checkudata(L, idx, PL_ITER_MT);
}

static void check_ring_open(lua_State *L, const pl_ring *r) {
  if (!r->base) luaL_error(L, "attempt to use a closed perf ring");
  if (r->owner != pl_self())
    luaL_error(L, "perf ring used in a forked child (mapped by pid %d)",
               (int)r->owner);
}

/* Pushes the table to fill (the reused one, or nothing: pl_record_push
** then makes one) and returns its index, 0 for a fresh table. */
static int target(lua_State *L, pl_iter *it) {
  if (!it->reuse) return 0;
  lua_getiuservalue(L, lua_upvalueindex(1), 2);
  return lua_gettop(L);
}

static int finish(lua_State *L, pl_iter *it) {
  it->done = 1;
  lua_pushnil(L);
  return 1;
}

/* Yields the record the iterator's way: the number of values pushed, or
** 0 when samples() passes over a record that is not a sample. */
static int emit(lua_State *L, pl_iter *it, const pl_record *rec, int status,
                const char *why) {
  if (it->nfields == 0) {
    pl_record_push(L, rec, status, why, target(L, it), &it->keys);
    return 1;
  }
  if (rec->type != PL_REC_SAMPLE) return 0;
  if (status != PL_DECODE_OK || !rec->known) {
    if (status == PL_DECODE_OK)
      return luaL_error(L, "sample record: %s", why ? why : "not decoded");
    return luaL_error(L, "sample record: %s%s%s", pl_decode_strerror(status),
                      why ? ": " : "", why ? why : "");
  }
  luaL_checkstack(L, it->nfields, "too many fields");
  for (int i = 0; i < it->nfields; i++) pl_sample_field_push(L, it->fields[i], rec);
  return it->nfields;
}

static int step_records(lua_State *L, pl_iter *it) {
  pl_ring *r = it->ring;
  check_ring_open(L, r);
  for (;;) {
    pl_record rec;
    int status, n;
    const char *why;
    if (!pl_ring_read(L, r, it->head, &rec, &status, &why)) return finish(L, it);
    /* passed over or raising: consumed first (emit then reads nothing
    ** from the ring), so a raise cannot repeat */
    if (it->nfields && (rec.type != PL_REC_SAMPLE || status != PL_DECODE_OK || !rec.known)) {
      pl_ring_consume(r, &rec);
      if ((n = emit(L, it, &rec, status, why)) > 0) return n;
      continue;
    }
    n = emit(L, it, &rec, status, why);
    pl_ring_consume(r, &rec);
    return n;
  }
}

static int step_snapshot(lua_State *L, pl_iter *it) {
  check_ring_open(L, it->ring);
  for (;;) {
    if (it->snap_len - it->snap_off < 8) return finish(L, it);
    const unsigned char *p = it->snap + it->snap_off;
    size_t size = pl_u16at(p + 6);
    if (size < 8 || size > it->snap_len - it->snap_off) return finish(L, it);
    pl_record rec;
    const char *lwhy = NULL, *dwhy = NULL;
    const pl_layout *lay = pl_layouts_find(&it->ring->set, p, size, &lwhy);
    int status = pl_decode(p, size, lay, &rec, &dwhy);
    it->snap_off += size;
    int n = emit(L, it, &rec, status, dwhy ? dwhy : lwhy);
    if (n > 0) return n;
  }
}

/* The time of slot s's next record (0 when it has none: such records come
** out as soon as they reach the front of their ring). */
static void merge_peek(merge_slot *s) {
  pl_ring *r = s->ring;
  const unsigned char *p;
  size_t len;
  int rc = pl_rbuf_next(&r->rb, s->head, pl_ring_tail(r), &p, &len);
  if (rc == PL_RBUF_EMPTY) { s->peeked = -1; return; }
  s->peeked = 1;
  s->time = 0;
  if (rc != PL_RBUF_RECORD) return;    /* the read below reports it */
  const char *why;
  const pl_layout *lay = pl_layouts_find(&r->set, p, len, &why);
  uint64_t t;
  if (pl_record_time(lay, p, len, &t)) s->time = t;
}

static int step_merge(lua_State *L, pl_iter *it) {
  for (;;) {
    merge_slot *best = NULL;
    for (size_t i = 0; i < it->n; i++) {
      merge_slot *s = &it->slots[i];
      check_ring_open(L, s->ring);
      if (!s->peeked) merge_peek(s);
      if (s->peeked > 0 && (!best || s->time < best->time)) best = s;
    }
    if (!best) return finish(L, it);
    pl_record rec;
    int status, n;
    const char *why;
    best->peeked = 0;
    if (!pl_ring_read(L, best->ring, best->head, &rec, &status, &why)) {
      best->peeked = -1;
      continue;
    }
    if (it->nfields && (rec.type != PL_REC_SAMPLE || status != PL_DECODE_OK || !rec.known)) {
      pl_ring_consume(best->ring, &rec);
      if ((n = emit(L, it, &rec, status, why)) > 0) return n;
      continue;
    }
    n = emit(L, it, &rec, status, why);
    pl_ring_consume(best->ring, &rec);
    return n;
  }
}

/* The iterator function: a closure over its pl_iter, so the arguments the
** generic for passes need no checking. */
static int iter_step(lua_State *L) {
  pl_iter *it = lua_touserdata(L, lua_upvalueindex(1));
  if (it->closed) return luaL_error(L, "attempt to use a closed ring iterator");
  if (it->done) {
    lua_pushnil(L);
    return 1;
  }
  switch (it->kind) {
  case IT_RECORDS: return step_records(L, it);
  case IT_SNAPSHOT: return step_snapshot(L, it);
  default: return step_merge(L, it);
  }
}

static int iter_close(lua_State *L) {
  pl_iter *it = check_iter(L, 1);
  it->done = it->closed = 1;
  return 0;
}

static int iter_tostring(lua_State *L) {
  pl_iter *it = check_iter(L, 1);
  static const char *const kinds[] = { "records", "snapshot", "merge" };
  lua_pushfstring(L, "perf.ring.iter %s (%s)", kinds[it->kind],
                  it->closed ? "closed" : it->done ? "done" : "open");
  return 1;
}

/* Makes the iterator userdata (uv1 = ring or list, uv2 = reused table,
** uv3 = snapshot copy) and pushes the four values of a generic for. */
static pl_iter *new_iter(lua_State *L, int kind, int src, int tbl,
                         size_t extra) {
  if (tbl && !lua_isnoneornil(L, tbl)) luaL_checktype(L, tbl, LUA_TTABLE);
  pl_iter *it = lua_newuserdatauv(L, sizeof *it + extra, 3);
  memset(it, 0, sizeof *it + extra);
  it->kind = kind;
  it->done = 1;
  luaL_setmetatable(L, PL_ITER_MT);
  lua_pushvalue(L, src);
  lua_setiuservalue(L, -2, 1);
  if (tbl && lua_istable(L, tbl)) {
    lua_pushvalue(L, tbl);
    lua_setiuservalue(L, -2, 2);
    it->reuse = 1;
  }
  return it;
}


/* The sample field named by the string at idx, or raise with a
** did-you-mean (shared with file:samples, see ring.h). */
int pl_sample_field_check(lua_State *L, int idx) {
  const char *name = luaL_checkstring(L, idx);
  int f = 0;
  while (pl_sample_field_names[f] && strcmp(pl_sample_field_names[f], name)) f++;
  if (!pl_sample_field_names[f]) {
    luaL_error(L, "samples: no sample field '%s'%s", name,
               pl_did_you_mean(L, name, pl_sample_field_names, (size_t)pl_sample_field_count));
  }
  return f;
}

/* Reads the field names at first.. into it->fields, checking each against
** the sample_type of every layout of the rings given. */
static void check_fields(lua_State *L, pl_iter *it, int first,
                         pl_ring **rings, size_t nrings) {
  int top = lua_gettop(L);
  if (top < first) luaL_error(L, "samples: name at least one field");
  if (top - first + 1 > MAX_FIELDS) luaL_error(L, "samples: at most %d fields", MAX_FIELDS);
  for (int i = first; i <= top; i++) {
    int f = pl_sample_field_check(L, i);
    for (size_t k = 0; k < nrings; k++)
      for (size_t j = 0; j < rings[k]->nlayouts; j++)
        if (!pl_sample_field_in(f, rings[k]->layouts[j].sample_type))
          luaL_error(L, "samples: field '%s' is not in the sample_type of "
                     "every event writing here", pl_sample_field_names[f]);
    it->fields[it->nfields++] = (unsigned char)f;
  }
}

/* rb:samples(field, ...) */
static int rb_samples(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);
  if (r->backward)
    return luaL_error(L, "this ring is in overwrite mode (write_backward): "
                      "read it with rb:snapshot()");
  pl_iter *it = new_iter(L, IT_RECORDS, 1, 0, 0);
  lua_rotate(L, 2, 1);            /* the iterator below the field names */
  check_fields(L, it, 3, &r, 1);
  lua_settop(L, 2);
  it->ring = r;
  it->head = pl_ring_head(r);
  it->done = 0;
  return pl_push_for(L, iter_step);
}

/* rb:records([t]) */
static int rb_records(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);
  if (r->backward)
    return luaL_error(L, "this ring is in overwrite mode (write_backward): "
                      "read it with rb:snapshot()");
  pl_iter *it = new_iter(L, IT_RECORDS, 1, 2, 0);
  it->ring = r;
  it->head = pl_ring_head(r);
  it->done = 0;
  return pl_push_for(L, iter_step);
}

/* rb:snapshot([t]): pauses the output, copies the readable records, resumes,
** then yields them newest first. */
static int rb_snapshot(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);
  if (!r->backward)
    return luaL_error(L, "rb:snapshot() reads an overwrite ring: open the "
                      "event with write_backward = true");
  pl_iter *it = new_iter(L, IT_SNAPSHOT, 1, 2, 0);
  it->ring = r;
  /* the copy's room is allocated before pausing, so nothing can raise
  ** while the output is paused */
  unsigned char *copy = lua_newuserdatauv(L, (size_t)r->rb.size, 0);
  if (pl_ring_fd(r) < 0) return luaL_error(L, "the ring's event is closed");
  if (ioctl(pl_ring_fd(r), PERF_EVENT_IOC_PAUSE_OUTPUT, 1) < 0) {
    int err = errno;      /* iterators raise: the message pl_fail builds */
    pl_fail(L, err, "snapshot: PERF_EVENT_IOC_PAUSE_OUTPUT", NULL);
    lua_pop(L, 1);
    return lua_error(L);
  }
  uint64_t head = pl_ring_head(r);
  uint64_t n = pl_rbuf_backward_extent(&r->rb, head);
  pl_rbuf_copy(&r->rb, head, copy, (size_t)n);
  ioctl(pl_ring_fd(r), PERF_EVENT_IOC_PAUSE_OUTPUT, 0);
  lua_setiuservalue(L, -2, 3);
  it->snap = copy;
  it->snap_len = (size_t)n;
  it->done = 0;
  return pl_push_for(L, iter_step);
}

/* perf.core.merge(rings [, t | field, ...]): the rings' available records
** in time order, as tables or as sample field values */
static int l_merge(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int fields = lua_type(L, 2) == LUA_TSTRING;
  /* without fields, slot 2 holds the table to reuse or nil: the private
  ** copy of the list pushed below must never land there */
  if (!fields) lua_settop(L, 2);
  size_t n = (size_t)lua_rawlen(L, 1);
  if (n > 4096) return luaL_argerror(L, 1, "at most 4096 rings");
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, (lua_Integer)i);
    pl_ring *r = pl_check_ring(L, -1);
    if (r->backward)
      return luaL_argerror(L, 1, "an overwrite ring cannot be merged");
    lua_pop(L, 1);
  }
  /* a private copy of the list, so the caller changing it is harmless */
  lua_createtable(L, (int)n, 0);
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, (lua_Integer)i);
    lua_rawseti(L, -2, (lua_Integer)i);
  }
  int list = lua_gettop(L);
  pl_iter *it = new_iter(L, IT_MERGE, list, fields ? 0 : 2, n * sizeof(merge_slot));
  it->n = n;
  it->slots = (merge_slot *)(it + 1);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, list, (lua_Integer)i + 1);
    it->slots[i].ring = pl_to_ring(L, -1);
    it->slots[i].head = pl_ring_head(it->slots[i].ring);
    lua_pop(L, 1);
  }
  if (fields) {
    pl_ring *v[64];
    size_t k = 0;
    /* checks against the layouts of (up to 64 of) the rings */
    for (size_t i = 0; i < n && k < 64; i++) v[k++] = it->slots[i].ring;
    lua_remove(L, list);          /* kept by the iterator (uv1) */
    lua_rotate(L, 2, 1);          /* iterator at 2, field names after it */
    check_fields(L, it, 3, v, k);
    lua_settop(L, 2);
  }
  it->done = 0;
  return pl_push_for(L, iter_step);
}

static const luaL_Reg iter_meta[] = {
  { "__gc", iter_close },
  { "__close", iter_close },
  { "__tostring", iter_tostring },
  { NULL, NULL }
};

static const luaL_Reg ring_methods[] = {
  { "records", rb_records },
  { "samples", rb_samples },
  { "snapshot", rb_snapshot },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "merge", l_merge },
  { NULL, NULL }
};

void pl_open_ring_iter(lua_State *L) {
  pl_new_metatable(L, PL_ITER_MT, iter_meta, NULL);
  lua_pop(L, 1);
  pl_add_methods(L, PL_RING_MT, ring_methods);
  luaL_setfuncs(L, functions, 0);
}
