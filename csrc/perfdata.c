/*
** perfdata.c: perf.data files, read through the ring's decoder.
**
**   local f = perf.core.perfdata_open(path)     -- or nil, msg, errno
**   f:info()            attrs, raw feature sections, meta records
**   f:set_names(list)   event names by attr, for rec.event
**   for rec in f:records([t]) do ... end
**   for ip, tid in f:samples("ip", "tid") do ... end
**   f:close()
**
** The file is read whole into memory and its framing checked once, when
** it opens: the header, the attr and feature sections and every record
** header of the data section must lie inside the file, or the open fails
** with a message naming the offset. Records are then decoded with
** pl_decode (decode.h) and pushed with pl_record_push, as a ring's are,
** each with the layout of the attr its id belongs to (perf's rule in
** evlist__event2evsel: one attr, or an attr without sample_id_all for a
** non-sample record, needs no id; an id 0 means the first attr).
**
** Layout of the file (tools/perf/Documentation/perf.data-file-format.txt
** and perf's util/header.c): a perf_file_header (magic "PERFILE2", its
** size, attr_size, the attrs, data and event_types sections, a 256-bit
** feature bitmap); feature sections are indexed by an array of
** {offset, size} after the data section, one per bit set, in bit order.
** A pipe-mode file has a 16-byte header (magic, size = 16) and only
** records: attrs come as PERF_RECORD_HEADER_ATTR, features as
** PERF_RECORD_HEADER_FEATURE. Records perf adds itself have types from 64
** (tools/lib/perf/include/perf/event.h, enum perf_user_event_type).
**
** Compressed records (`perf record -z`): PERF_RECORD_COMPRESSED holds
** zstd data from after its header to header.size, PERF_RECORD_COMPRESSED2
** a u64 data_size and then that many bytes (header.size padded to 8).
** All of a file's compressed records are one zstd stream (perf keeps one
** ZSTD_DStream per session), and what they hold is a stream of records
** in which a record may begin in one compressed record and end in a
** later one (perf's decomp_last_rem). When the file opens, the records are
** rebuilt into `inflated`: each plain record as it is, each compressed one
** replaced by the whole records it completes, which come at its place (as
** perf delivers them); the framing is then checked on that, and every
** reader walks it. One compressed record may not decompress to more than
** the ring size the HEADER_COMPRESSED feature gives (mmap_len: perf's
** own decompression buffer is that size).
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring.h"
#include "zstd.h"

#define PL_DATA_MT "perf.data.file"
#define PL_DATA_ITER_MT "perf.data.iter"

#define MAGIC2 0x32454c4946524550ULL          /* "PERFILE2", little-endian */
#define FILE_HEADER_SIZE 104                  /* struct perf_file_header */
#define PIPE_HEADER_SIZE 16                   /* struct perf_pipe_file_header */
#define ATTR_SIZE_VER0 64                     /* PERF_ATTR_SIZE_VER0 */
#define MAX_ATTRS 65536
#define MAX_FIELDS 16
#define FEAT_COMPRESSED 27                    /* HEADER_COMPRESSED */
#define COMP_ZSTD 1                           /* perf's enum perf_compress_type */
/* what one compressed record may hold when the file gives no mmap_len,
** and at most whatever it gives */
#define INFLATE_DEFAULT ((size_t)64 << 20)
#define INFLATE_MAX ((size_t)1 << 30)
/* all of a file's records once decompressed (the fuzz build lowers it) */
#ifndef PL_DATA_MAX_INFLATED
#define PL_DATA_MAX_INFLATED ((size_t)1 << 40)
#endif

/* enum perf_user_event_type */
enum {
  U_HEADER_ATTR = 64, U_HEADER_EVENT_TYPE, U_HEADER_TRACING_DATA,
  U_HEADER_BUILD_ID, U_FINISHED_ROUND, U_ID_INDEX, U_AUXTRACE_INFO,
  U_AUXTRACE, U_AUXTRACE_ERROR, U_THREAD_MAP, U_CPU_MAP, U_STAT_CONFIG,
  U_STAT, U_STAT_ROUND, U_EVENT_UPDATE, U_TIME_CONV, U_HEADER_FEATURE,
  U_COMPRESSED, U_FINISHED_INIT, U_COMPRESSED2, U_END
};
static const char *const user_names[U_END - U_HEADER_ATTR] = {
  "header_attr", "header_event_type", "header_tracing_data",
  "header_build_id", "finished_round", "id_index", "auxtrace_info",
  "auxtrace", "auxtrace_error", "thread_map", "cpu_map", "stat_config",
  "stat", "stat_round", "event_update", "time_conv", "header_feature",
  "compressed", "finished_init", "compressed2",
};

typedef struct id_entry {
  uint64_t id;
  size_t attr;
} id_entry;

/* Where the records from `at` on (an offset in dfile.rec) come from: the
** file from file_off on, or (inner) the compressed record at file_off. */
typedef struct segment {
  size_t at, file_off;
  int inner;
} segment;

typedef struct dfile {
  unsigned char *buf;           /* the whole file; NULL once closed */
  size_t len;
  int pipe;
  size_t data_off, data_end;    /* the records */
  const unsigned char *rec;     /* the records read: buf + data_off, or inflated */
  size_t rec_len;
  unsigned char *inflated;      /* compressed records replaced by theirs; or NULL */
  segment *segs;                /* for inflated: where its records come from */
  size_t nsegs;
  size_t ncompressed;           /* compressed records walk() saw */
  size_t compressed;            /* compressed records in the file */
  pl_zstd *zs;                  /* the file's zstd stream, while it opens */
  size_t nrecords;
  size_t nattrs;
  struct pl_attr *attrs;        /* as read, zero-extended */
  size_t *attr_off;             /* where each attr's bytes are in buf */
  size_t *attr_size;
  pl_layout *lays;              /* one per attr */
  pl_layouts set;
  id_entry *ids;                /* sorted by id */
  size_t nids;
  size_t feat_off[256], feat_size[256];   /* normal layout: sections */
} dfile;

/* ---- building the file's description ---- */

static void dfile_free(dfile *f) {
  pl_zstd_free(f->zs);
  f->zs = NULL;
  free(f->inflated);
  free(f->segs);
  f->inflated = NULL;
  f->segs = NULL;
  f->rec = NULL;
  f->rec_len = f->nsegs = 0;
  free(f->buf);
  free(f->attrs);
  free(f->attr_off);
  free(f->attr_size);
  free(f->lays);
  free(f->ids);
  f->buf = NULL;
  f->attrs = NULL;
  f->attr_off = f->attr_size = NULL;
  f->lays = NULL;
  f->ids = NULL;
  f->nattrs = f->nids = 0;
}

/* [off, off + n) inside a file of len bytes, without overflow */
static int inside(size_t len, uint64_t off, uint64_t n) {
  return off <= len && n <= len - off;
}

static int add_attr(dfile *f, const unsigned char *src, size_t off, size_t size) {
  if (f->nattrs >= MAX_ATTRS) return -1;
  size_t n = f->nattrs + 1;
  struct pl_attr *a = realloc(f->attrs, n * sizeof *a);
  if (!a) return -1;
  f->attrs = a;
  size_t *o = realloc(f->attr_off, n * sizeof *o);
  if (!o) return -1;
  f->attr_off = o;
  size_t *s = realloc(f->attr_size, n * sizeof *s);
  if (!s) return -1;
  f->attr_size = s;
  memset(&a[f->nattrs], 0, sizeof *a);
  memcpy(&a[f->nattrs], src, size < sizeof *a ? size : sizeof *a);
  o[f->nattrs] = off;
  s[f->nattrs] = size;
  f->nattrs = n;
  return 0;
}

static int add_ids(dfile *f, size_t attr, const unsigned char *p, size_t n) {
  if (n == 0) return 0;
  if (n > ((size_t)1 << 24)) return -1;
  id_entry *v = realloc(f->ids, (f->nids + n) * sizeof *v);
  if (!v) return -1;
  f->ids = v;
  for (size_t i = 0; i < n; i++) {
    v[f->nids + i].id = pl_u64at(p + 8 * i);
    v[f->nids + i].attr = attr;
  }
  f->nids += n;
  return 0;
}

static int cmp_id(const void *a, const void *b) {
  uint64_t x = ((const id_entry *)a)->id, y = ((const id_entry *)b)->id;
  return x < y ? -1 : x > y;
}

/* Bytes that follow a record in the stream without being counted in its
** header.size: the tracing data after PERF_RECORD_HEADER_TRACING_DATA
** (padded to 8) and the trace after PERF_RECORD_AUXTRACE. */
static int payload(const unsigned char *p, size_t size, uint64_t *extra) {
  uint32_t type = pl_u32at(p);
  *extra = 0;
  if (type == U_HEADER_TRACING_DATA) {
    if (size < 12) return -1;
    *extra = ((uint64_t)pl_u32at(p + 8) + 7) & ~(uint64_t)7;
  } else if (type == U_AUXTRACE) {
    if (size < 16) return -1;
    *extra = pl_u64at(p + 8);
  }
  return 0;
}

/* A failure while opening: the message on the stack, -1 returned. */
static int bad(lua_State *L, const char *path, const char *fmt, size_t off,
               const char *detail) {
  lua_pushfstring(L, "perf.data.open \"%s\": ", path);
  lua_pushfstring(L, fmt, (lua_Integer)off, detail ? detail : "");
  lua_concat(L, 2);
  return -1;
}

/* Attrs of the normal layout: attr_size bytes each, the last 16 an
** {offset, size} section of their ids. */
static int read_attrs(lua_State *L, dfile *f, const char *path) {
  const unsigned char *h = f->buf;
  uint64_t attr_size = pl_u64at(h + 16);
  uint64_t off = pl_u64at(h + 24), size = pl_u64at(h + 32);
  if (attr_size < ATTR_SIZE_VER0 + 16 || attr_size > 4096)
    return bad(L, path, "header at offset %I: attr_size %s is not a perf_event_attr size",
               16, lua_pushfstring(L, "%I", (lua_Integer)attr_size));
  if (!inside(f->len, off, size) || size % attr_size)
    return bad(L, path, "attrs section at offset %I runs past the end of the file "
               "or is not a whole number of attrs%s", (size_t)off, NULL);
  if (size / attr_size > MAX_ATTRS)
    return bad(L, path, "attrs section at offset %I: too many attrs%s", (size_t)off, NULL);
  for (uint64_t i = 0; i < size / attr_size; i++) {
    size_t a = (size_t)(off + i * attr_size);
    uint64_t ioff = pl_u64at(f->buf + a + attr_size - 16);
    uint64_t isize = pl_u64at(f->buf + a + attr_size - 8);
    if (!inside(f->len, ioff, isize) || isize % 8)
      return bad(L, path, "attr at offset %I: its ids section runs past the "
                 "end of the file%s", a, NULL);
    if (add_attr(f, f->buf + a, a, (size_t)attr_size - 16) < 0 ||
        add_ids(f, f->nattrs - 1, f->buf + ioff, (size_t)(isize / 8)) < 0)
      return bad(L, path, "attr at offset %I: %s", a, "out of memory");
  }
  return 0;
}

/* Feature sections: an {offset, size} per bit set, after the data. */
static int read_features(lua_State *L, dfile *f, const char *path) {
  const unsigned char *bits = f->buf + 72;
  size_t at = f->data_end;
  for (int b = 1; b < 256; b++) {
    if (!((bits[b / 8] >> (b % 8)) & 1)) continue;
    if (!inside(f->len, at, 16))
      return bad(L, path, "feature index at offset %I runs past the end of the file%s",
                 at, NULL);
    uint64_t off = pl_u64at(f->buf + at), size = pl_u64at(f->buf + at + 8);
    if (!inside(f->len, off, size))
      return bad(L, path, "feature index entry at offset %I (feature %s) points past the end of the file",
                 at, lua_pushfstring(L, "%d", b));
    f->feat_off[b] = (size_t)off;
    f->feat_size[b] = (size_t)size;
    at += 16;
  }
  return 0;
}

/* The file offset of the record at `at` in f->rec (for a record that was
** compressed: the compressed record's, as perf reports it); *inner says
** which. */
static size_t file_offset(const dfile *f, size_t at, int *inner) {
  *inner = 0;
  if (!f->inflated) return f->data_off + at;
  size_t lo = 0, hi = f->nsegs;        /* the last segment with .at <= at */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->segs[mid].at <= at) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return f->data_off + at;
  const segment *g = &f->segs[lo - 1];
  *inner = g->inner;
  return g->inner ? g->file_off : g->file_off + (at - g->at);
}

/* Pushes where the record at `at` of f->rec is, for a message. */
static const char *push_where(lua_State *L, const dfile *f, size_t at) {
  int inner;
  size_t off = file_offset(f, at, &inner);
  if (inner)
    return lua_pushfstring(L, "offset %I (a record the compressed record there "
                           "holds)", (lua_Integer)off);
  return lua_pushfstring(L, "offset %I", (lua_Integer)off);
}

/* A record's framing failed: fmt has a %s for where it is, one for detail. */
static int bad_at(lua_State *L, const dfile *f, const char *path, size_t at,
                  const char *fmt, const char *detail) {
  const char *where = push_where(L, f, at);
  lua_pushfstring(L, "perf.data.open \"%s\": ", path);
  lua_pushfstring(L, fmt, where, detail ? detail : "");
  lua_concat(L, 2);
  return -1;
}

/* Checks the framing of the record at `at` of the n bytes at p (an offset
** in f->rec, for messages): its size plus what follows it, or 0 with a
** message on the stack. A record cut short by the end is `truncated`. */
static size_t frame(lua_State *L, const dfile *f, const char *path,
                    const unsigned char *p, size_t n, size_t at) {
  if (n < 8) {
    bad_at(L, f, path, at, "truncated record header at %s%s", NULL);
    return 0;
  }
  size_t size = pl_u16at(p + 6);
  if (size < 8) {
    bad_at(L, f, path, at, "record at %s: size %s is below a header's 8 bytes",
           lua_pushfstring(L, "%d", (int)size));
    return 0;
  }
  if (size > n) {
    bad_at(L, f, path, at, "truncated record at %s: %s",
           lua_pushfstring(L, "its header says %d bytes, %I are left",
                           (int)size, (lua_Integer)n));
    return 0;
  }
  uint64_t extra;
  if (payload(p, size, &extra) < 0 || extra > n - size) {
    bad_at(L, f, path, at, "record at %s: its payload runs past the end of the data%s", NULL);
    return 0;
  }
  return size + (size_t)extra;
}

/* Checks the framing of every record of f->rec; in pipe mode collects
** the attrs. */
static int walk(lua_State *L, dfile *f, const char *path) {
  size_t off = 0;
  f->nrecords = f->ncompressed = 0;
  while (off < f->rec_len) {
    const unsigned char *p = f->rec + off;
    size_t n = frame(L, f, path, p, f->rec_len - off, off);
    if (!n) return -1;
    size_t size = pl_u16at(p + 6);
    uint32_t type = pl_u32at(p);
    if (type == U_COMPRESSED || type == U_COMPRESSED2) f->ncompressed++;
    if (f->pipe && type == U_HEADER_ATTR) {
      uint32_t asize = size >= 16 ? pl_u32at(p + 12) : 0;
      if (asize == 0) asize = ATTR_SIZE_VER0;
      if (size < 8 + ATTR_SIZE_VER0 || asize > size - 8)
        return bad_at(L, f, path, off, "header_attr record at %s: the attr does not fit%s",
                      NULL);
      int inner;
      size_t foff = file_offset(f, off, &inner);
      if (add_attr(f, p + 8, inner ? foff : foff + 8, asize) < 0 ||
          add_ids(f, f->nattrs - 1, p + 8 + asize, (size - 8 - asize) / 8) < 0)
        return bad_at(L, f, path, off, "header_attr record at %s: %s",
                      "out of memory or too many attrs");
    }
    off += n;
    f->nrecords++;
  }
  return 0;
}

/* ---- compressed records ---- */

static int add_segment(dfile *f, size_t at, size_t file_off, int inner) {
  if (f->nsegs) {                   /* one segment for a run of plain records */
    segment *g = &f->segs[f->nsegs - 1];
    if (!inner && !g->inner && g->file_off + (at - g->at) == file_off) return 0;
    if (g->at == at) { g->file_off = file_off; g->inner = inner; return 0; }
  }
  segment *v = realloc(f->segs, (f->nsegs + 1) * sizeof *v);
  if (!v) return -1;
  f->segs = v;
  v[f->nsegs++] = (segment){ at, file_off, inner };
  return 0;
}

/* The HEADER_COMPRESSED feature (perf's write_compressed: u32 version,
** type, level, ratio, mmap_len) at p: checks the type, sets *limit. */
static int compressed_feature(lua_State *L, const char *path, size_t off,
                              const unsigned char *p, size_t n, size_t *limit) {
  if (n < 20) return 0;         /* no mmap_len: the default limit */
  uint32_t type = pl_u32at(p + 4), mmap_len = pl_u32at(p + 16);
  if (type != COMP_ZSTD)
    return bad(L, path, "the compressed feature (at offset %I) names compression "
               "type %s; only zstd (1) is read", off,
               lua_pushfstring(L, "%d", (int)type));
  *limit = mmap_len ? (mmap_len < INFLATE_MAX ? mmap_len : INFLATE_MAX) : INFLATE_DEFAULT;
  return 0;
}

/* Builds f->inflated from the records of the data section (their framing
** checked): 0, -1 with a message on the stack, or -2 with nil, message,
** errno pushed (libzstd cannot be loaded). */
static int inflate_records(lua_State *L, dfile *f, const char *path, int *err) {
  size_t limit = INFLATE_DEFAULT;
  if (f->feat_off[FEAT_COMPRESSED] &&
      compressed_feature(L, path, f->feat_off[FEAT_COMPRESSED],
                         f->buf + f->feat_off[FEAT_COMPRESSED],
                         f->feat_size[FEAT_COMPRESSED], &limit) < 0)
    return -1;
  unsigned char *o = NULL;      /* the records so far, then a partial one */
  size_t len = 0, cap = 0, done = 0, last = 0;
  const unsigned char *data = f->buf + f->data_off;
  size_t dlen = f->data_end - f->data_off;
  int rc = 0;
  for (size_t at = 0; at < dlen;) {
    const unsigned char *p = data + at;
    size_t off = f->data_off + at, size = pl_u16at(p + 6), n;
    uint64_t extra;
    payload(p, size, &extra);             /* the framing was checked */
    n = size + (size_t)extra;
    at += n;
    uint32_t type = pl_u32at(p);
    if (type == U_HEADER_FEATURE && size >= 16 && pl_u64at(p + 8) == FEAT_COMPRESSED &&
        compressed_feature(L, path, off, p + 16, size - 16, &limit) < 0)
      { rc = -1; break; }
    if (type != U_COMPRESSED && type != U_COMPRESSED2) {
      /* a plain record: before the partial record that may be pending */
      if (cap - len < n) {
        size_t want = len + n > 2 * cap ? len + n : 2 * cap;
        unsigned char *q = realloc(o, want ? want : 1);
        if (!q) { rc = -3; break; }
        o = q;
        cap = want;
      }
      memmove(o + done + n, o + done, len - done);
      memcpy(o + done, p, n);
      if (add_segment(f, done, off, 0) < 0) { rc = -3; break; }
      done += n;
      len += n;
      continue;
    }
    last = off;
    const unsigned char *src = p + 8;
    uint64_t srclen = size - 8;
    if (type == U_COMPRESSED2) {
      if (size < 16 || pl_u64at(p + 8) > size - 16) {
        rc = bad(L, path, "compressed record at offset %I: its data_size runs "
                 "past the record%s", off, NULL);
        break;
      }
      src = p + 16;
      srclen = pl_u64at(p + 8);
    }
    if (!f->zs) {
      const char *why;
      f->zs = pl_zstd_new(&why, err);
      if (!f->zs) {
        lua_pushfstring(L, "perf.data.open \"%s\": the compressed record at offset %I "
                        "needs zstd: %s", path, (lua_Integer)off, why);
        pl_fail(L, *err, lua_tostring(L, -1), *err == ENOMEM ? NULL :
                "install zstd's library (Debian and Ubuntu: libzstd1; Fedora: "
                "libzstd), or name its file in PERF_LUA_LIBZSTD");
        rc = -2;
        break;
      }
    }
    const char *why;
    if (pl_zstd_inflate(f->zs, src, (size_t)srclen, &o, &len, &cap, limit, &why) < 0) {
      if (strcmp(why, "more than limit") == 0)
        rc = bad(L, path, "compressed record at offset %I: %s", off,
                 lua_pushfstring(L, "it decompresses to more than %I bytes, the ring "
                                 "size the compressed feature gives", (lua_Integer)limit));
      else
        rc = bad(L, path, "compressed record at offset %I: cannot decompress it: %s",
                 off, why);
      break;
    }
    if (len > PL_DATA_MAX_INFLATED) {
      rc = bad(L, path, "compressed record at offset %I: %s", off,
               lua_pushfstring(L, "the file's records decompress to more than %I bytes",
                               (lua_Integer)PL_DATA_MAX_INFLATED));
      break;
    }
    /* the records it completes come at its place */
    if (add_segment(f, done, off, 1) < 0) { rc = -3; break; }
    while (len - done >= 8) {
      size_t rsize = pl_u16at(o + done + 6);
      if (rsize < 8) {
        f->inflated = o;                  /* for the message's offset */
        rc = bad_at(L, f, path, done, "record at %s: size %s is below a header's 8 bytes",
                    lua_pushfstring(L, "%d", (int)rsize));
        f->inflated = NULL;
        break;
      }
      if (rsize > len - done) break;
      if (payload(o + done, rsize, &extra) < 0) extra = 0;  /* frame() says why */
      if (extra > len - done - rsize) break;
      done += rsize + (size_t)extra;
    }
    if (rc) break;
  }
  if (rc == 0 && done != len)
    rc = bad(L, path, "compressed record at offset %I: %s", last,
             lua_pushfstring(L, "the compressed records end inside a record "
                             "(%I bytes of it)", (lua_Integer)(len - done)));
  pl_zstd_free(f->zs);                    /* its part is done */
  f->zs = NULL;
  if (rc == -3) {
    free(o);
    *err = ENOMEM;
    return -1;
  }
  if (rc < 0) {
    free(o);
    return rc;
  }
  f->inflated = o ? o : malloc(1);
  if (!f->inflated) { *err = ENOMEM; return -1; }
  f->rec = f->inflated;
  f->rec_len = done;
  return 0;
}

static void build_layouts(dfile *f) {
  f->lays = calloc(f->nattrs ? f->nattrs : 1, sizeof *f->lays);
  for (size_t i = 0; f->lays && i < f->nattrs; i++) {
    const struct pl_attr *a = &f->attrs[i];
    pl_layout *l = &f->lays[i];
    l->sample_type = a->sample_type;
    l->read_format = a->read_format;
    l->branch_sample_type = a->branch_sample_type;
    l->regs_user = a->sample_regs_user;
    l->regs_intr = a->sample_regs_intr;
    l->sample_id_all = (int)PL_HAS(a, PL_FLAG_SAMPLE_ID_ALL);
  }
  const char *why;
  pl_layouts_init(&f->set, f->lays, f->lays ? f->nattrs : 0, &why);
  if (f->nids) qsort(f->ids, f->nids, sizeof *f->ids, cmp_id);
}

/* Reads the file and checks it: 0, or -1 with a message on the stack. */
static int load(lua_State *L, dfile *f, const char *path, int *err) {
  *err = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) { *err = errno; return -1; }
  struct stat st;
  if (fstat(fd, &st) < 0) { *err = errno; close(fd); return -1; }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return bad(L, path, "not a regular file (at offset %I)%s", 0, NULL);
  }
  size_t len = (size_t)st.st_size;
  f->buf = malloc(len ? len : 1);
  if (!f->buf) { close(fd); *err = ENOMEM; return -1; }
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, f->buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { *err = errno; close(fd); return -1; }
    if (n == 0) break;
    got += (size_t)n;
  }
  close(fd);
  f->len = len = got;
  if (len < PIPE_HEADER_SIZE)
    return bad(L, path, "not a perf.data file: %I bytes, a header takes 16 (at offset 0)%s",
               len, NULL);
  uint64_t magic = pl_u64at(f->buf);
  if (magic == __builtin_bswap64(MAGIC2))
    return bad(L, path, "the file was written in the other byte order "
               "(magic at offset %I); this reader takes files in this "
               "machine's byte order: convert it where it was recorded%s", 0, NULL);
  if (memcmp(f->buf, "PERFFILE", 8) == 0)
    return bad(L, path, "a version 1 perf.data file (magic at offset %I): "
               "only PERFILE2 files are read%s", 0, NULL);
  if (magic != MAGIC2)
    return bad(L, path, "not a perf.data file (no PERFILE2 magic at offset %I)%s", 0, NULL);
  uint64_t hsize = pl_u64at(f->buf + 8);
  if (hsize == PIPE_HEADER_SIZE) {
    f->pipe = 1;
    f->data_off = PIPE_HEADER_SIZE;
    f->data_end = len;
  } else {
    if (hsize < FILE_HEADER_SIZE || len < FILE_HEADER_SIZE)
      return bad(L, path, "header at offset %I: %s", 0,
                 len < FILE_HEADER_SIZE ? "truncated" : "its size is neither 16 nor >= 104");
    uint64_t doff = pl_u64at(f->buf + 40), dsize = pl_u64at(f->buf + 48);
    if (!inside(len, doff, dsize) || doff < FILE_HEADER_SIZE)
      return bad(L, path, "the data section (at offset %I) runs past the end of the file%s",
                 (size_t)doff, NULL);
    f->data_off = (size_t)doff;
    f->data_end = (size_t)(doff + dsize);
    if (read_attrs(L, f, path) < 0 || read_features(L, f, path) < 0) return -1;
  }
  f->rec = f->buf + f->data_off;
  f->rec_len = f->data_end - f->data_off;
  if (walk(L, f, path) < 0) return -1;
  f->compressed = f->ncompressed;
  if (f->compressed) {
    int rc = inflate_records(L, f, path, err);
    if (rc < 0) return rc;
    /* again on the records as rebuilt: pipe mode's attrs anew */
    if (f->pipe) {
      free(f->attrs);
      free(f->attr_off);
      free(f->attr_size);
      free(f->ids);
      f->attrs = NULL;
      f->attr_off = f->attr_size = NULL;
      f->ids = NULL;
      f->nattrs = f->nids = 0;
    }
    if (walk(L, f, path) < 0) return -1;
  }
  build_layouts(f);
  if (!f->lays) { *err = ENOMEM; return -1; }
  return 0;
}

static dfile *check_file(lua_State *L, int idx) {
  dfile *f = luaL_checkudata(L, idx, PL_DATA_MT);
  if (!f->buf) luaL_error(L, "attempt to use a closed perf.data file");
  return f;
}

/* perf.core.perfdata_open(path) -> file | nil, msg, errno */
static int l_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  dfile *f = lua_newuserdatauv(L, sizeof *f, 1);
  memset(f, 0, sizeof *f);
  luaL_setmetatable(L, PL_DATA_MT);
  int err;
  int rc = load(L, f, path, &err);
  if (rc == -2) {               /* nil, message, errno pushed */
    dfile_free(f);
    return 3;
  }
  if (rc < 0) {
    dfile_free(f);
    if (err) {
      lua_pushfstring(L, "perf.data.open \"%s\"", path);
      return pl_fail(L, err, lua_tostring(L, -1), NULL);
    }
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

static int f_close(lua_State *L) {
  dfile *f = luaL_checkudata(L, 1, PL_DATA_MT);
  dfile_free(f);
  return 0;
}

static int f_tostring(lua_State *L) {
  dfile *f = luaL_checkudata(L, 1, PL_DATA_MT);
  if (!f->buf) lua_pushliteral(L, "perf.data.file (closed)");
  else lua_pushfstring(L, "perf.data.file (%s%s, %I bytes, %I attrs, %I records)",
                       f->pipe ? "pipe mode" : "normal",
                       f->compressed ? ", compressed" : "", (lua_Integer)f->len,
                       (lua_Integer)f->nattrs, (lua_Integer)f->nrecords);
  return 1;
}

/* f:info() -> { pipe, attrs = {{attr, ids, offset}}, features = {[bit] = bytes},
**               meta = {raw header_feature / event_update records}, ... } */
static int f_info(lua_State *L) {
  dfile *f = check_file(L, 1);
  lua_createtable(L, 0, 8);
  lua_pushboolean(L, f->pipe);
  lua_setfield(L, -2, "pipe");
  lua_pushinteger(L, (lua_Integer)f->data_off);
  lua_setfield(L, -2, "data_offset");
  lua_pushinteger(L, (lua_Integer)(f->data_end - f->data_off));
  lua_setfield(L, -2, "data_size");
  lua_pushinteger(L, (lua_Integer)f->nrecords);
  lua_setfield(L, -2, "nrecords");
  lua_pushinteger(L, (lua_Integer)f->compressed);
  lua_setfield(L, -2, "compressed");
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
    lua_pushinteger(L, (lua_Integer)f->attr_off[i]);
    lua_setfield(L, -2, "offset");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "attrs");
  lua_newtable(L);
  for (int b = 1; b < 256; b++)
    if (f->feat_off[b]) {
      lua_pushlstring(L, (const char *)f->buf + f->feat_off[b], f->feat_size[b]);
      lua_rawseti(L, -2, b);
    }
  /* pipe mode: the features travel as records */
  lua_Integer nmeta = 0;
  lua_newtable(L);
  for (size_t off = 0; off < f->rec_len;) {
    const unsigned char *p = f->rec + off;
    size_t size = pl_u16at(p + 6);
    uint64_t extra;
    payload(p, size, &extra);
    uint32_t type = pl_u32at(p);
    if (type == U_HEADER_FEATURE && size >= 16) {
      uint64_t bit = pl_u64at(p + 8);
      if (bit > 0 && bit < 256) {
        lua_pushlstring(L, (const char *)p + 16, size - 16);
        lua_rawseti(L, -3, (lua_Integer)bit);
      }
    } else if (type == U_EVENT_UPDATE) {
      lua_pushlstring(L, (const char *)p, size);
      lua_rawseti(L, -2, ++nmeta);
    }
    off += size + (size_t)extra;
  }
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

/* ---- finding a record's attr ---- */

/* The attr index for the record at p, or -1 with *why set. */
static long record_attr(const dfile *f, const unsigned char *p, size_t size,
                        const char **why) {
  *why = NULL;
  if (f->nattrs == 0) { *why = "the file describes no event"; return -1; }
  if (f->nattrs == 1) return 0;
  if (pl_u32at(p) != PL_REC_SAMPLE && !f->lays[0].sample_id_all) return 0;
  uint64_t id;
  if (!pl_record_id(&f->set, p, size, &id)) {
    *why = "record carries no id to tell which event wrote it";
    return -1;
  }
  if (id == 0) return 0;
  size_t lo = 0, hi = f->nids;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->ids[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  if (lo < f->nids && f->ids[lo].id == id) return (long)f->ids[lo].attr;
  *why = "record id matches no event of this file";
  return -1;
}

/* ---- records perf adds itself ---- */

static void set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const unsigned char *p, size_t max) {
  size_t n = strnlen((const char *)p, max);
  lua_pushlstring(L, (const char *)p, n);
  lua_setfield(L, -2, k);
}

static void set_hex(lua_State *L, const char *k, const unsigned char *p, size_t n) {
  luaL_Buffer b;
  static const char digits[] = "0123456789abcdef";
  luaL_buffinit(L, &b);
  for (size_t i = 0; i < n; i++) {
    luaL_addchar(&b, digits[p[i] >> 4]);
    luaL_addchar(&b, digits[p[i] & 15]);
  }
  luaL_pushresult(&b);
  lua_setfield(L, -2, k);
}

/* Pushes a user record as a fresh table: its fixed fields where the
** layout is plain, else `raw` (the bytes after the header). Every read is
** inside [p, p + size). */
static void push_user(lua_State *L, const unsigned char *p, size_t size,
                      size_t off) {
  uint32_t type = pl_u32at(p);
  uint16_t misc = pl_u16at(p + 4);
  lua_createtable(L, 0, 6);
  if (type < U_END) lua_pushstring(L, user_names[type - U_HEADER_ATTR]);
  else lua_pushliteral(L, "unknown");
  lua_setfield(L, -2, "type");
  if (type >= U_END) set_int(L, "type_id", type);
  set_int(L, "misc", misc);
  set_int(L, "offset", off);
  const unsigned char *b = p + 8;
  size_t n = size - 8;
  switch (type) {
  case U_FINISHED_ROUND: case U_FINISHED_INIT:
    return;
  case U_HEADER_ATTR: {
    uint32_t asize = n >= 8 ? pl_u32at(b + 4) : 0;
    if (asize == 0) asize = ATTR_SIZE_VER0;
    if (n < ATTR_SIZE_VER0 || asize > n) break;
    struct pl_attr a;
    memset(&a, 0, sizeof a);
    memcpy(&a, b, asize < sizeof a ? asize : sizeof a);
    pl_attr_push(L, &a);
    lua_setfield(L, -2, "attr");
    lua_createtable(L, (int)((n - asize) / 8), 0);
    for (size_t i = 0; i < (n - asize) / 8; i++) {
      lua_pushinteger(L, (lua_Integer)pl_u64at(b + asize + 8 * i));
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "ids");
    return;
  }
  case U_HEADER_TRACING_DATA:
    if (n < 4) break;
    set_int(L, "size", pl_u32at(b));
    return;
  case U_HEADER_BUILD_ID:
    /* pid, build_id[24] (data[20], size, 3 reserved), filename */
    if (n < 28) break;
    set_int(L, "pid", (uint64_t)(int64_t)(int32_t)pl_u32at(b));
    set_hex(L, "build_id", b + 4, (misc & (1u << 15)) && b[24] <= 20 ? b[24] : 20);
    set_str(L, "filename", b + 28, n - 28);
    return;
  case U_ID_INDEX: {
    if (n < 8) break;
    uint64_t nr = pl_u64at(b);
    if (nr > (n - 8) / 32) break;
    lua_createtable(L, (int)nr, 0);
    for (uint64_t i = 0; i < nr; i++) {
      const unsigned char *e = b + 8 + 32 * i;
      lua_createtable(L, 0, 4);
      set_int(L, "id", pl_u64at(e));
      set_int(L, "idx", pl_u64at(e + 8));
      set_int(L, "cpu", pl_u64at(e + 16));
      set_int(L, "tid", pl_u64at(e + 24));
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "entries");
    return;
  }
  case U_AUXTRACE_INFO:
    if (n < 8) break;
    set_int(L, "auxtrace_type", pl_u32at(b));
    lua_pushlstring(L, (const char *)b + 8, n - 8);
    lua_setfield(L, -2, "priv");
    return;
  case U_AUXTRACE:
    if (n < 40) break;
    set_int(L, "size", pl_u64at(b));
    set_int(L, "aux_offset", pl_u64at(b + 8));
    set_int(L, "reference", pl_u64at(b + 16));
    set_int(L, "idx", pl_u32at(b + 24));
    set_int(L, "tid", pl_u32at(b + 28));
    set_int(L, "cpu", pl_u32at(b + 32));
    return;
  case U_AUXTRACE_ERROR:
    if (n < 32) break;
    set_int(L, "error_type", pl_u32at(b));
    set_int(L, "code", pl_u32at(b + 4));
    set_int(L, "cpu", pl_u32at(b + 8));
    set_int(L, "pid", pl_u32at(b + 12));
    set_int(L, "tid", pl_u32at(b + 16));
    set_int(L, "ip", pl_u64at(b + 24));
    if (n > 32) set_str(L, "msg", b + 32, n - 32 < 64 ? n - 32 : 64);
    return;
  case U_THREAD_MAP: {
    if (n < 8) break;
    uint64_t nr = pl_u64at(b);
    if (nr > (n - 8) / 24) break;
    lua_createtable(L, (int)nr, 0);
    for (uint64_t i = 0; i < nr; i++) {
      const unsigned char *e = b + 8 + 24 * i;
      lua_createtable(L, 0, 2);
      set_int(L, "pid", pl_u64at(e));
      set_str(L, "comm", e + 8, 16);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "threads");
    return;
  }
  case U_CPU_MAP: {
    /* perf_record_cpu_map_data: u16 type; then CPUS: u16 nr, u16 cpu[nr];
    ** RANGE_CPUS: u8 any_cpu, u8 pad, u16 start, u16 end */
    if (n < 2) break;
    uint16_t kind = pl_u16at(b);
    if (kind == 0 && n >= 4 && pl_u16at(b + 2) <= (n - 4) / 2) {
      uint16_t nr = pl_u16at(b + 2);
      lua_createtable(L, nr, 0);
      for (uint16_t i = 0; i < nr; i++) {
        lua_pushinteger(L, pl_u16at(b + 4 + 2 * i));
        lua_rawseti(L, -2, i + 1);
      }
      lua_setfield(L, -2, "cpus");
      return;
    }
    if (kind == 2 && n >= 8 && pl_u16at(b + 6) >= pl_u16at(b + 4)) {
      uint16_t lo = pl_u16at(b + 4), hi = pl_u16at(b + 6);
      lua_createtable(L, hi - lo + 1 + (b[2] != 0), 0);
      int k = 0;
      if (b[2]) { lua_pushinteger(L, -1); lua_rawseti(L, -2, ++k); }
      for (int c = lo; c <= hi; c++) {
        lua_pushinteger(L, c);
        lua_rawseti(L, -2, ++k);
      }
      lua_setfield(L, -2, "cpus");
      return;
    }
    break;
  }
  case U_TIME_CONV:
    if (n < 24) break;
    set_int(L, "time_shift", pl_u64at(b));
    set_int(L, "time_mult", pl_u64at(b + 8));
    set_int(L, "time_zero", pl_u64at(b + 16));
    if (n >= 48) {
      set_int(L, "time_cycles", pl_u64at(b + 24));
      set_int(L, "time_mask", pl_u64at(b + 32));
      lua_pushboolean(L, b[40]);
      lua_setfield(L, -2, "cap_user_time_zero");
      lua_pushboolean(L, b[41]);
      lua_setfield(L, -2, "cap_user_time_short");
    }
    return;
  case U_HEADER_FEATURE:
    if (n < 8) break;
    set_int(L, "feature", pl_u64at(b));
    lua_pushlstring(L, (const char *)b + 8, n - 8);
    lua_setfield(L, -2, "data");
    return;
  case U_EVENT_UPDATE:
    if (n < 16) break;
    set_int(L, "update_type", pl_u64at(b));
    set_int(L, "id", pl_u64at(b + 8));
    if (pl_u64at(b) == 2) set_str(L, "name", b + 16, n - 16);   /* NAME */
    else {
      lua_pushlstring(L, (const char *)b + 16, n - 16);
      lua_setfield(L, -2, "data");
    }
    return;
  default:
    break;
  }
  lua_pushlstring(L, (const char *)b, n);
  lua_setfield(L, -2, "raw");
}

/* ---- iterators ---- */

typedef struct diter {
  size_t off;
  int nfields;
  unsigned char fields[MAX_FIELDS];
  int done, reuse;
  pl_keyset keys;
} diter;

/* uv1 = file, uv2 = reused table */
static int iter_step(lua_State *L) {
  diter *it = lua_touserdata(L, lua_upvalueindex(1));
  if (it->done) { lua_pushnil(L); return 1; }
  lua_getiuservalue(L, lua_upvalueindex(1), 1);
  int fidx = lua_gettop(L);
  dfile *f = lua_touserdata(L, fidx);
  if (!f->buf) return luaL_error(L, "attempt to use a closed perf.data file");
  while (it->off < f->rec_len) {
    size_t off = it->off;
    const unsigned char *p = f->rec + off;
    size_t size = pl_u16at(p + 6);           /* checked when the file opened */
    uint64_t extra;
    payload(p, size, &extra);
    it->off = off + size + (size_t)extra;
    uint32_t type = pl_u32at(p);
    if (it->nfields) {
      if (type != PL_REC_SAMPLE) continue;
    } else if (type >= U_HEADER_ATTR) {
      int inner;
      push_user(L, p, size, file_offset(f, off, &inner));
      return 1;
    }
    const char *why = NULL, *dwhy = NULL;
    long a = record_attr(f, p, size, &why);
    pl_record rec;
    int status = pl_decode(p, size, a >= 0 ? &f->lays[a] : NULL, &rec, &dwhy);
    if (dwhy) why = dwhy;
    if (it->nfields) {
      if (status != PL_DECODE_OK || !rec.known)
        return luaL_error(L, "sample record at %s: %s%s%s", push_where(L, f, off),
                          pl_decode_strerror(status), why ? ": " : "", why ? why : "");
      luaL_checkstack(L, it->nfields, "too many fields");
      for (int i = 0; i < it->nfields; i++)
        pl_sample_field_push(L, it->fields[i], &rec);
      return it->nfields;
    }
    int t = 0;
    if (it->reuse) {
      lua_getiuservalue(L, lua_upvalueindex(1), 2);
      t = lua_gettop(L);
    }
    pl_record_push(L, &rec, status, why, t, it->reuse ? &it->keys : NULL);
    int top = lua_gettop(L);
    /* rec.event: the name of the attr (uv1 of the file) */
    if (lua_getiuservalue(L, fidx, 1) == LUA_TTABLE && a >= 0)
      lua_rawgeti(L, -1, a + 1);
    else
      lua_pushnil(L);
    lua_setfield(L, top, "event");
    lua_settop(L, top);
    return 1;
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

static diter *new_iter(lua_State *L) {
  diter *it = lua_newuserdatauv(L, sizeof *it, 2);
  memset(it, 0, sizeof *it);
  it->off = 0;
  luaL_setmetatable(L, PL_DATA_ITER_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  return it;
}


/* f:records([t]) */
static int f_records(lua_State *L) {
  check_file(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  diter *it = new_iter(L);
  if (lua_istable(L, 2)) {
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, -2, 2);
    it->reuse = 1;
  }
  return pl_push_for(L, iter_step);
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
  diter *it = new_iter(L);
  it->nfields = top - 1;
  memcpy(it->fields, fields, (size_t)it->nfields);
  return pl_push_for(L, iter_step);
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
  luaL_newmetatable(L, PL_DATA_MT);
  luaL_setfuncs(L, meta, 0);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, PL_DATA_ITER_MT);
  lua_pushcfunction(L, iter_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, iter_close);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_open);
  lua_setfield(L, -2, "perfdata_open");
  lua_pushcfunction(L, l_attr);
  lua_setfield(L, -2, "perfdata_attr");
  lua_pushcfunction(L, l_scan);
  lua_setfield(L, -2, "perfdata_scan");
}
