/*
** perfdata.c: perf.data files, read through the ring's decoder.
**
**   local f = perf.core.perfdata_open(path [, split])   -- or nil, msg, errno
**   f:info()            attrs, raw feature sections, meta records, note
**   f:set_names(list)   event names by attr, for rec.event
**   for rec in f:records([t]) do ... end
**   for ip, tid in f:samples("ip", "tid") do ... end
**   f:close()
**
** Opening (mapping, framing, decompression, directories) is in
** perfdata_load.c, the records perf adds itself in perfdata_user.c. Records
** are decoded with pl_decode (decode.h) and pushed with pl_record_push, as
** a ring's are, each with the layout of the attr its id belongs to (perf's
** rule in evlist__event2evsel: one attr, or an attr without sample_id_all
** for a non-sample record, needs no id; an id 0 means the first attr).
**
** Leader sampling (`perf record -e '{a,b}:S'`, any sample with
** PERF_SAMPLE_READ): a sample is yielded once for each value it read, as
** perf's deliver_sample_value (util/session.c) delivers it to perf script:
** with that value's id and event, and as period the value less the one the
** same id read before (per iterator, from 0); a value whose id no event of
** the file has, or whose period is 0, yields nothing (perf: "no reason to
** deliver sample for zero period"). Every member's record still holds the
** whole group read (`read`). With split false, samples come as written.
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "perfdata_file.h"

#define PL_DATA_ITER_MT "perf.data.iter"
#define ATTR_SIZE_VER0 64                     /* PERF_ATTR_SIZE_VER0 */
#define MAX_FIELDS 16

static dfile *check_file(lua_State *L, int idx) {
  dfile *f = luaL_checkudata(L, idx, PL_DATA_MT);
  if (!f->open) luaL_error(L, "attempt to use a closed perf.data file");
  return f;
}

/* perf.core.perfdata_open(path [, split]) -> file | nil, msg, errno */
static int l_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int split = lua_isnoneornil(L, 2) || lua_toboolean(L, 2);
  lua_settop(L, 1);
  dfile *f = lua_newuserdatauv(L, sizeof *f, 1);
  memset(f, 0, sizeof *f);
  luaL_setmetatable(L, PL_DATA_MT);
  if (pl_data_load(L, f, path) < 0) {
    pl_data_free(f);
    return 3;                   /* nil, message, errno */
  }
  f->split = split;
  return 1;
}

static int f_close(lua_State *L) {
  dfile *f = luaL_checkudata(L, 1, PL_DATA_MT);
  pl_data_free(f);
  return 0;
}

static size_t file_len(const dfile *f) {
  size_t n = 0;
  for (size_t i = 0; i < f->nsrcs; i++) n += f->srcs[i].len;
  return n;
}

static int f_tostring(lua_State *L) {
  dfile *f = luaL_checkudata(L, 1, PL_DATA_MT);
  if (!f->open) lua_pushliteral(L, "perf.data.file (closed)");
  else lua_pushfstring(L, "perf.data.file (%s%s%s, %I bytes, %I attrs, %I records%s)",
                       f->pipe ? "pipe mode" : f->dir ? "directory" : "normal",
                       f->compressed ? ", compressed" : "", f->stopped ? ", cut" : "",
                       (lua_Integer)file_len(f), (lua_Integer)f->nattrs,
                       (lua_Integer)f->nrecords, f->note ? ", see its note" : "");
  return 1;
}

/* the features that travel as records (pipe mode), and the event_update
** records, into the tables at -2 (features) and -1 (meta) */
static void info_records(lua_State *L, const dfile *f) {
  lua_Integer nmeta = 0;
  for (size_t i = 0; i < f->nmeta; i++) {
    const dstream *s = &f->streams[f->meta[i].stream];
    const unsigned char *p = s->rec + f->meta[i].at;
    size_t size = pl_u16at(p + 6);
    if (pl_u32at(p) == U_HEADER_FEATURE && size >= 16) {
      uint64_t bit = pl_u64at(p + 8);
      if (bit > 0 && bit < 256) {
        lua_pushlstring(L, (const char *)p + 16, size - 16);
        lua_rawseti(L, -3, (lua_Integer)bit);
      }
    } else if (pl_u32at(p) == U_EVENT_UPDATE) {
      lua_pushlstring(L, (const char *)p, size);
      lua_rawseti(L, -2, ++nmeta);
    }
  }
}

static void set_integer(lua_State *L, const char *k, size_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

/* f:info() -> { pipe, dir, attrs = {{attr, ids, offset}}, features =
**   {[bit] = bytes}, meta = {raw event_update records}, files = {paths},
**   note, stopped_at, stopped_file, ... } */
static int f_info(lua_State *L) {
  dfile *f = check_file(L, 1);
  lua_createtable(L, 0, 12);
  lua_pushboolean(L, f->pipe);
  lua_setfield(L, -2, "pipe");
  lua_pushboolean(L, f->dir);
  lua_setfield(L, -2, "dir");
  set_integer(L, "data_offset", f->streams[0].data_off);
  set_integer(L, "data_size", f->streams[0].inflated ? f->streams[0].rec_len
              : f->streams[0].rec_len);
  set_integer(L, "nrecords", f->nrecords);
  set_integer(L, "compressed", f->compressed);
  if (f->note) {
    lua_pushstring(L, f->note);
    lua_setfield(L, -2, "note");
  }
  if (f->stopped) {
    set_integer(L, "stopped_at", f->stop_off);
    lua_pushstring(L, f->srcs[f->stop_src].name);
    lua_setfield(L, -2, "stopped_file");
  }
  lua_createtable(L, (int)f->nsrcs, 0);
  for (size_t i = 0; i < f->nsrcs; i++) {
    lua_pushstring(L, f->srcs[i].name);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "files");
  lua_createtable(L, (int)f->nattrs, 0);
  for (size_t i = 0; i < f->nattrs; i++) {
    lua_createtable(L, 0, 3);
    pl_attr_push(L, &f->attrs[i]);
    lua_setfield(L, -2, "attr");
    lua_newtable(L);
    for (size_t k = 0, n = 0; k < f->nids; k++)
      if (f->ids[k].attr == i) {
        lua_pushinteger(L, (lua_Integer)f->ids[k].id);
        lua_rawseti(L, -2, (lua_Integer)++n);
      }
    lua_setfield(L, -2, "ids");
    set_integer(L, "offset", f->attr_off[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "attrs");
  lua_newtable(L);
  for (int b = 1; b < 256; b++)
    if (f->feat_off[b]) {
      lua_pushlstring(L, (const char *)f->srcs[0].base + f->feat_off[b], f->feat_size[b]);
      lua_rawseti(L, -2, b);
    }
  lua_newtable(L);
  info_records(L, f);
  lua_setfield(L, -3, "meta");
  lua_setfield(L, -2, "features");
  return 1;
}

/* f:set_names(list): the names rec.event takes, by attr (kept in uv1) */
static int f_set_names(lua_State *L) {
  check_file(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_setiuservalue(L, 1, 1);
  return 0;
}

/* ---- iterators ---- */

/* A field samples() reads at a fixed offset of a sample: where, and how */
enum { FX_U64, FX_S32, FX_U32 };
#define FX(off, kind) ((int32_t)((off) << 2 | (kind)))

typedef struct diter {
  dfile *f;                     /* the file (uv1 keeps it alive) */
  size_t stream, off;           /* the next record: in file order */
  size_t idx;                   /* ... or f->order[idx] */
  int nfields;
  unsigned char fields[MAX_FIELDS];
  int done, reuse;
  pl_keyset keys;
  /* f:records([t]) with a Lua filler (record_fill.c): 1 into t, 2 into
  ** fresh tables; for t, the event and misc of the sample last filled in
  ** C (last_attr -1: none such) */
  int fill;
  long last_attr;
  uint16_t last_misc;
  /* a sample with PERF_SAMPLE_READ being yielded value by value */
  int group;
  uint64_t gi, gn;
  pl_record grec;
  const dstream *gs;
  size_t gat;
  size_t nprev;
  int32_t *fixed;               /* samples(): per attr, each field's FX, then the
                                ** bytes a sample needs for them; or NULL */
  uint64_t prev[];              /* by id entry: the value read before */
} diter;

/* The next record: 1 with its stream and offset, or 0 at the end. */
static int next_record(const dfile *f, diter *it, const dstream **s, size_t *at) {
  if (f->order) {
    if (it->idx >= f->norder) return 0;
    const dpos *e = &f->order[it->idx++];
    *s = &f->streams[e->stream];
    *at = e->at;
    return 1;
  }
  while (it->stream < f->nstreams) {
    const dstream *st = &f->streams[it->stream];
    if (it->off < st->rec_len) {
      const unsigned char *p = st->rec + it->off;
      size_t size = pl_u16at(p + 6);           /* checked when the file opened */
      uint64_t extra;
      pl_data_payload(p, size, &extra);
      *s = st;
      *at = it->off;
      it->off += size + (size_t)extra;
      return 1;
    }
    it->stream++;
    it->off = 0;
  }
  return 0;
}

/* The next value of the group sample in it->grec to yield, into *rec
** (id and period set): its attr, or -1 when none is left. */
static long next_member(const dfile *f, diter *it, pl_record *rec) {
  while (it->gi < it->gn) {
    uint64_t value, id, lost;
    pl_readv_entry(&it->grec.u.sample.read, it->gi++, &value, &id, &lost);
    const id_entry *e = pl_data_id(f, id);
    if (!e) continue;                          /* perf: nr_unknown_id */
    size_t k = (size_t)(e - f->ids);
    uint64_t period = value - it->prev[k];
    it->prev[k] = value;
    if (period == 0) continue;
    *rec = it->grec;
    rec->u.sample.id = rec->u.sample.identifier = id;
    rec->u.sample.period = period;
    rec->layout = &f->lays[e->attr];
    return (long)e->attr;
  }
  it->group = 0;
  return -1;
}

/* Yields the record (or the fields) of rec, attr a. */
static int yield(lua_State *L, diter *it, const pl_record *rec, int status,
                 const char *why, long a) {
  if (it->nfields) {
    luaL_checkstack(L, it->nfields, "too many fields");
    for (int i = 0; i < it->nfields; i++)
      pl_sample_field_push(L, it->fields[i], rec);
    return it->nfields;
  }
  int t = 0;
  if (it->reuse) {                      /* on the stack: pl_record_push settles there */
    lua_pushvalue(L, lua_upvalueindex(3));
    t = lua_gettop(L);
  }
  pl_record_push(L, rec, status, why, t, it->reuse ? &it->keys : NULL);
  /* rec.event: the name of the attr (the key: upvalue 4) */
  lua_pushvalue(L, lua_upvalueindex(4));
  if (a >= 0 && lua_type(L, lua_upvalueindex(2)) == LUA_TTABLE)
    lua_rawgeti(L, lua_upvalueindex(2), a + 1);
  else
    lua_pushnil(L);
  lua_rawset(L, -3);
  return 1;
}

/* The fields samples() reads straight from a sample, at offsets fixed by
** its attr's sample_type (perf_output_sample's order: identifier, ip,
** pid/tid, time, addr, id, stream_id, cpu/res, period, then the parts of
** variable size): the FX of `name`, or -1. */
static int32_t fixed_field(uint64_t st, const char *name, size_t *end) {
  static const uint64_t order[] = { PL_S_IDENTIFIER, PL_S_IP, PL_S_TID, PL_S_TIME,
    PL_S_ADDR, PL_S_ID, PL_S_STREAM_ID, PL_S_CPU, PL_S_PERIOD };
  size_t at[9], off = 8;
  for (int i = 0; i < 9; i++) {
    at[i] = off;
    if (st & order[i]) off += 8;
  }
  *end = off;
  static const struct { const char *name; int i, kind, shift; } fx[] = {
    { "identifier", 0, FX_U64, 0 }, { "ip", 1, FX_U64, 0 }, { "pid", 2, FX_S32, 0 },
    { "tid", 2, FX_S32, 4 }, { "time", 3, FX_U64, 0 }, { "addr", 4, FX_U64, 0 },
    { "stream_id", 6, FX_U64, 0 }, { "cpu", 7, FX_U32, 0 }, { "period", 8, FX_U64, 0 },
  };
  if (strcmp(name, "id") == 0)
    return FX(at[(st & PL_S_ID) ? 5 : 0], FX_U64);
  for (size_t k = 0; k < sizeof fx / sizeof *fx; k++)
    if (strcmp(name, fx[k].name) == 0) return FX(at[fx[k].i] + fx[k].shift, fx[k].kind);
  return -1;
}

/* samples() on the fast path: the next sample's fields read where they
** lie, without decoding it. Returns the number of values pushed; 0 to
** leave the sample at the iterator's position to the decoding path (a
** sample split by group reads, a short one, one no event wrote), or at
** the end. */
static int fast_sample(lua_State *L, diter *it) {
  const dfile *f = it->f;
  const dstream *s;
  size_t at, save_stream = it->stream, save_off = it->off, save_idx = it->idx;
  while (next_record(f, it, &s, &at)) {
    const unsigned char *p = s->rec + at;
    if (pl_u32at(p) != PL_REC_SAMPLE) {
      save_stream = it->stream, save_off = it->off, save_idx = it->idx;
      continue;
    }
    size_t size = pl_u16at(p + 6);
    const char *why;
    long a = pl_data_attr(f, p, size, &why);
    const int32_t *fx = a >= 0 ? it->fixed + (size_t)a * (size_t)(it->nfields + 1) : NULL;
    if (!fx || fx[it->nfields] < 0 || size < (size_t)fx[it->nfields]) break;
    luaL_checkstack(L, it->nfields, "too many fields");
    for (int i = 0; i < it->nfields; i++) {
      const unsigned char *v = p + (fx[i] >> 2);
      switch (fx[i] & 3) {
      case FX_U64: lua_pushinteger(L, (lua_Integer)pl_u64at(v)); break;
      case FX_S32: lua_pushinteger(L, (int32_t)pl_u32at(v)); break;
      default: lua_pushinteger(L, (lua_Integer)pl_u32at(v)); break;
      }
    }
    return it->nfields;
  }
  it->stream = save_stream, it->off = save_off, it->idx = save_idx;
  return 0;
}

/* upvalues: the iterator (uv1: the file), the event names, the reused
** table or nil, the key "event" */
static int iter_step(lua_State *L) {
  diter *it = lua_touserdata(L, lua_upvalueindex(1));
  if (it->done) { lua_pushnil(L); return 1; }
  dfile *f = it->f;
  if (!f->open) return luaL_error(L, "attempt to use a closed perf.data file");
  if (it->fixed) {
    int n = fast_sample(L, it);
    if (n) return n;
  }
  pl_record rec;
  if (it->group) {
    long a = next_member(f, it, &rec);
    it->last_attr = -1;
    if (a >= 0) return yield(L, it, &rec, PL_DECODE_OK, NULL, a);
  }
  const dstream *s;
  size_t at;
  while (next_record(f, it, &s, &at)) {
    const unsigned char *p = s->rec + at;
    size_t size = pl_u16at(p + 6);
    uint32_t type = pl_u32at(p);
    if (it->nfields) {
      if (type != PL_REC_SAMPLE) continue;
    } else if (type >= U_HEADER_ATTR) {
      int inner;
      it->last_attr = -1;
      pl_data_push_user(L, p, size, pl_data_offset(f, s, at, &inner));
      return 1;
    }
    const char *why = NULL, *dwhy = NULL;
    long a = pl_data_attr(f, p, size, &why);
    int status = pl_decode(p, size, a >= 0 ? &f->lays[a] : NULL, &rec, &dwhy);
    if (dwhy) why = dwhy;
    if (it->nfields && (status != PL_DECODE_OK || !rec.known))
      return luaL_error(L, "sample record at %s: %s%s%s", pl_data_where(L, f, s, at),
                        status != PL_DECODE_OK ? pl_decode_strerror(status) : "",
                        why && status != PL_DECODE_OK ? ": " : "",
                        why ? why : status == PL_DECODE_OK ? "it cannot be decoded" : "");
    if (it->nprev && status == PL_DECODE_OK && type == PL_REC_SAMPLE &&
        (rec.layout->sample_type & PL_S_READ)) {
      it->grec = rec;
      it->gi = 0;
      it->gn = (rec.u.sample.read.format & PL_F_GROUP) ? rec.u.sample.read.nr : 1;
      it->group = 1;
      it->gs = s;
      it->gat = at;
      a = next_member(f, it, &rec);
      if (a < 0) continue;
    }
    if (it->fill) {
      int plain = status == PL_DECODE_OK && type == PL_REC_SAMPLE && rec.known && !why &&
                  a >= 0 && pl_fill_fits(rec.layout->sample_type);
      if (plain && it->fill == 2) {               /* a fresh table, made in Lua */
        lua_pushinteger(L, a + 1);
        lua_pushinteger(L, rec.misc);
        return 2 + pl_fill_push(L, &rec);
      }
      if (plain && a == it->last_attr && rec.misc == it->last_misc) {
        lua_pushinteger(L, a + 1);              /* t has its keys: the values */
        return 1 + pl_fill_push(L, &rec);
      }
      it->last_attr = plain ? a : -1;
      it->last_misc = rec.misc;
    }
    return yield(L, it, &rec, status, why, a);
  }
  it->done = 1;
  lua_pushnil(L);
  return 1;
}

static int iter_close(lua_State *L) {
  diter *it = luaL_checkudata(L, 1, PL_DATA_ITER_MT);
  it->done = 1;
  return 0;
}

/* Does any attr sample PERF_SAMPLE_READ? Then samples are split. */
static int splits(const dfile *f) {
  if (!f->split) return 0;
  for (size_t i = 0; i < f->nattrs; i++)
    if (f->lays[i].sample_type & PL_S_READ) return 1;
  return 0;
}

static diter *new_iter(lua_State *L, dfile *f, size_t nfixed) {
  size_t nprev = splits(f) ? f->nids : 0;
  size_t size = sizeof(diter) + nprev * sizeof(uint64_t) + nfixed * sizeof(int32_t);
  diter *it = lua_newuserdatauv(L, size, 2);
  memset(it, 0, size);
  it->f = f;
  it->nprev = nprev;
  if (nfixed) it->fixed = (int32_t *)(it->prev + nprev);
  luaL_setmetatable(L, PL_DATA_ITER_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  return it;
}

/* Most events a file may have for f:records(t) to get a Lua filler. */
#define FILL_ATTRS 64

/* f:records([t]): the step on top replaced by the Lua filler of the
** file's events (record_fill.c), where one of them has plain samples. */
static void with_filler(lua_State *L, int reuse) {
  diter *it = lua_touserdata(L, -2);
  const dfile *f = it->f;
  uint64_t types[FILL_ATTRS];
  int any = 0;
  if (it->nfields || f->nattrs > FILL_ATTRS) return;
  for (size_t i = 0; i < f->nattrs; i++) {
    types[i] = f->lays[i].sample_type;
    any |= pl_fill_fits(types[i]);
  }
  if (!any) return;
  if (reuse) lua_pushvalue(L, reuse);
  else luaL_getmetatable(L, "perf.record");     /* show.c's, or nil */
  lua_getiuservalue(L, 1, 1);                   /* the names, as the step has them */
  int named = lua_type(L, -1) == LUA_TTABLE;
  if (pl_fill_function(L, types, (int)f->nattrs, named, !reuse)) {
    it->fill = reuse ? 1 : 2;
    it->last_attr = -1;
  } else {
    lua_pop(L, 2);                              /* t, names: the step stays */
  }
}

/* The generic for's values for the iterator on top: the step function
** (its upvalues: the iterator, the file's event names, the reused table
** at `reuse` or nil), the iterator, nil, and the iterator again to close. */
static int push_iter(lua_State *L, int reuse) {
  int it = lua_gettop(L);
  lua_pushvalue(L, it);
  lua_getiuservalue(L, 1, 1);                   /* the names (f:set_names) */
  if (reuse) lua_pushvalue(L, reuse);
  else lua_pushnil(L);
  lua_pushliteral(L, "event");
  lua_pushcclosure(L, iter_step, 4);
  with_filler(L, reuse);
  lua_insert(L, it);
  lua_pushnil(L);
  lua_pushvalue(L, it + 1);
  return 4;
}

/* f:records([t]) */
static int f_records(lua_State *L) {
  dfile *f = check_file(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  diter *it = new_iter(L, f, 0);
  if (lua_istable(L, 2)) {
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, -2, 2);
    it->reuse = 1;
  }
  return push_iter(L, it->reuse ? 2 : 0);
}

/* f:samples(field, ...) */
static int f_samples(lua_State *L) {
  dfile *f = check_file(L, 1);
  int top = lua_gettop(L);
  if (top < 2) return luaL_error(L, "samples: name at least one field");
  if (top - 1 > MAX_FIELDS) return luaL_error(L, "samples: at most %d fields", MAX_FIELDS);
  unsigned char fields[MAX_FIELDS];
  for (int i = 2; i <= top; i++) {
    int k = pl_sample_field_check(L, i);
    for (size_t j = 0; j < f->nattrs; j++)
      if (!pl_sample_field_in(k, f->lays[j].sample_type))
        return luaL_error(L, "samples: field '%s' is not in the sample_type of "
                          "every event of this file", pl_sample_field_names[k]);
    fields[i - 2] = (unsigned char)k;
  }
  /* the fast path, where every field lies at a fixed offset */
  size_t nfixed = f->nattrs <= 4096 ? f->nattrs * (size_t)top : 0;
  diter *it = new_iter(L, f, nfixed);
  it->nfields = top - 1;
  memcpy(it->fields, fields, (size_t)it->nfields);
  for (size_t j = 0; j < f->nattrs && it->fixed; j++) {
    int32_t *fx = it->fixed + j * (size_t)top;
    size_t end = 0;
    uint64_t st = f->lays[j].sample_type;
    fx[it->nfields] = (it->nprev && (st & PL_S_READ)) ? -1 : 0;   /* split: decoded */
    for (int i = 0; i < it->nfields; i++) {
      fx[i] = fixed_field(st, pl_sample_field_names[fields[i]], &end);
      if (fx[i] < 0) fx[it->nfields] = -1;
    }
    if (fx[it->nfields] == 0) fx[it->nfields] = (int32_t)end;
  }
  return push_iter(L, 0);
}

/* ---- writing: what perf.data_writer needs from C ---- */

/* perf.core.perfdata_attr(ev) -> the event's perf_event_attr as opened
** (bytes, size field set), its id */
static int l_attr(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  struct pl_attr a = ev->attr;
  /* the smallest size that holds what is set: perf tools older than the
  ** running kernel refuse an attr larger than theirs ("more recent ABI")
  ** even when its extra fields are zero */
  size_t size = sizeof a;
  while (size > ATTR_SIZE_VER0 && pl_u64at((const unsigned char *)&a + size - 8) == 0)
    size -= 8;
  static const size_t sizes[] = { 64, 72, 80, 96, 104, 112, 120, 128, 136 };  /* VER0..VER8 */
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    if (sizes[i] >= size) { size = sizes[i]; break; }
  a.size = (uint32_t)size;
  uint64_t id = ev->id;
  if (!id && ioctl(ev->fd, PERF_EVENT_IOC_ID, &id) < 0)
    return pl_fail(L, errno, "PERF_EVENT_IOC_ID", NULL);
  ev->id = id;
  lua_pushlstring(L, (const char *)&a, size);
  lua_pushinteger(L, (lua_Integer)id);
  return 2;
}

/* perf.core.perfdata_scan(bytes) -> samples, lost, records: counts of a
** stream of kernel records (as rb:raw() gives them) */
static int l_scan(lua_State *L) {
  size_t len;
  const unsigned char *p = (const unsigned char *)luaL_checklstring(L, 1, &len);
  uint64_t samples = 0, lost = 0, n = 0;
  for (size_t off = 0; len - off >= 8;) {
    size_t size = pl_u16at(p + off + 6);
    if (size < 8 || size > len - off) break;
    uint32_t type = pl_u32at(p + off);
    if (type == PL_REC_SAMPLE) samples++;
    else if (type == PL_REC_LOST && size >= 24) lost += pl_u64at(p + off + 16);
    off += size;
    n++;
  }
  lua_pushinteger(L, (lua_Integer)samples);
  lua_pushinteger(L, (lua_Integer)lost);
  lua_pushinteger(L, (lua_Integer)n);
  return 3;
}

void pl_open_perfdata(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"info", f_info}, {"set_names", f_set_names}, {"records", f_records},
    {"samples", f_samples}, {"close", f_close}, {NULL, NULL}
  };
  static const luaL_Reg meta[] = {
    {"__gc", f_close}, {"__close", f_close}, {"__tostring", f_tostring},
    {NULL, NULL}
  };
  static const luaL_Reg iter_meta[] = {
    {"__close", iter_close}, {"__gc", iter_close}, {NULL, NULL}
  };
  static const luaL_Reg functions[] = {
    {"perfdata_open", l_open}, {"perfdata_attr", l_attr}, {"perfdata_scan", l_scan},
    {NULL, NULL}
  };
  pl_new_metatable(L, PL_DATA_MT, meta, methods);
  pl_new_metatable(L, PL_DATA_ITER_MT, iter_meta, NULL);
  lua_pop(L, 2);
  luaL_setfuncs(L, functions, 0);
}
