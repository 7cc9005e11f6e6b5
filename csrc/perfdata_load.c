/*
** perfdata_load.c: opening a perf.data file (perfdata_file.h).
**
** Layout (tools/perf/Documentation/perf.data-file-format.txt and perf's
** util/header.c): a perf_file_header (magic "PERFILE2", its size,
** attr_size, the attrs, data and event_types sections, a 256-bit feature
** bitmap); feature sections are indexed by an array of {offset, size}
** after the data section, one per bit set, in bit order. A pipe-mode file
** has a 16-byte header (magic, size = 16) and only records: attrs come as
** PERF_RECORD_HEADER_ATTR, features as PERF_RECORD_HEADER_FEATURE.
**
** A regular file is mapped, never read whole; a pipe or another file that
** cannot be mapped (`perf record -o - | lua ... /dev/stdin`) is read to
** its end. The framing is checked once here: every record header must lie
** inside its stream. What perf itself reads, this reads too, and more: a
** file cut inside its data section or its features, or damaged mid-way,
** is read up to the damage, and `note` says where reading stopped (perf
** refuses a file cut inside its data: "incompatible file format"); a
** header whose data size is 0 (perf record was killed, SIGKILL leaves the
** header as it was written first) gets perf's own diagnosis, and the
** records that reached the file are read. Only what has no readable
** header or attrs is refused.
**
** `perf record --threads` writes a directory (perf's util/data.c): `data`,
** a normal file whose data section holds what perf synthesized and whose
** header has the dir_format feature, and data.0, data.1, ..., raw records
** of each writer thread. They are read as perf reads them: every stream,
** and the records of all of them in time order (perf's ordered events).
**
** Compressed records (`perf record -z`): PERF_RECORD_COMPRESSED holds
** zstd data from after its header to header.size, PERF_RECORD_COMPRESSED2
** a u64 data_size and then that many bytes (header.size padded to 8).
** A stream's compressed records are one zstd stream (perf keeps one
** ZSTD_DStream per reader), and what they hold is a stream of records in
** which a record may begin in one compressed record and end in a later
** one (perf's decomp_last_rem). The records are rebuilt into `inflated`:
** each plain record as it is, each compressed one replaced by the whole
** records it completes, at its place (as perf delivers them). One
** compressed record may not decompress to more than the ring size the
** HEADER_COMPRESSED feature gives (mmap_len: perf's own buffer).
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata_file.h"

#define MAGIC2 0x32454c4946524550ULL          /* "PERFILE2", little-endian */
#define FILE_HEADER_SIZE 104                  /* struct perf_file_header */
#define PIPE_HEADER_SIZE 16                   /* struct perf_pipe_file_header */
#define ATTR_SIZE_VER0 64                     /* PERF_ATTR_SIZE_VER0 */
#define MAX_ATTRS 65536
#define MAX_DATA_FILES 4096
#define FEAT_DIR_FORMAT 24                    /* HEADER_DIR_FORMAT */
#define FEAT_COMPRESSED 27                    /* HEADER_COMPRESSED */
#define COMP_ZSTD 1                           /* perf's enum perf_compress_type */
/* what one compressed record may hold when the file gives no mmap_len,
** and at most whatever it gives */
#define INFLATE_DEFAULT ((size_t)64 << 20)
#define INFLATE_MAX ((size_t)1 << 30)
/* all of a stream's records once decompressed (the fuzz build lowers it) */
#ifndef PL_DATA_MAX_INFLATED
#define PL_DATA_MAX_INFLATED ((size_t)1 << 40)
#endif

/* how loading fails: nil, message, errno pushed */
#define OOM (-2)

const char *pl_hex(char *buf, uint64_t v) {
  snprintf(buf, 19, "0x%llx", (unsigned long long)v);
  return buf;
}

/* [off, off + n) inside len bytes, without overflow */
static int inside(size_t len, uint64_t off, uint64_t n) {
  return off <= len && n <= len - off;
}

/* nil, "perf.data.open "path": <fmt...>", EINVAL: a file that cannot be
** read at all (its header, attrs). Returns -1. */
static int refuse(lua_State *L, const char *path, const char *fmt, ...) {
  va_list ap;
  lua_pushnil(L);
  lua_pushfstring(L, "perf.data.open \"%s\": ", path);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  lua_pushinteger(L, EINVAL);
  return -1;
}

static int out_of_memory(lua_State *L, const char *path) {
  lua_pushfstring(L, "perf.data.open \"%s\"", path);
  pl_fail(L, ENOMEM, lua_tostring(L, -1), NULL);
  lua_remove(L, -4);
  return -1;
}

/* Adds to the file's note (parts joined by "; "). */
static void note(lua_State *L, dfile *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const char *s = lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  size_t old = f->note ? strlen(f->note) : 0, n = strlen(s);
  char *v = realloc(f->note, old + n + 3);
  if (v) {
    if (old) memcpy(v + old, "; ", 2), old += 2;
    memcpy(v + old, s, n + 1);
    f->note = v;
  }
  lua_pop(L, 1);
}

/* The records of stream s stop at `at`: why is on the stack (popped). */
static void stop(lua_State *L, dfile *f, dstream *s, size_t at) {
  int inner;
  char h[20];
  uint64_t off = pl_data_offset(f, s, at, &inner);
  if (!f->stopped) {
    f->stopped = 1;
    f->stop_off = off;
    f->stop_src = s->src;
  }
  note(L, f, "%s: reading stopped at %s%s: %s", f->srcs[s->src].name,
       inner ? "the compressed record at offset " : "offset ", pl_hex(h, off),
       lua_tostring(L, -1));
  lua_pop(L, 1);
  s->rec_len = at;
}

/* ---- the file's description ---- */

void pl_data_free(dfile *f) {
  pl_zstd_free(f->zs);
  f->zs = NULL;
  for (size_t i = 0; i < f->nstreams; i++) {
    free(f->streams[i].inflated);
    free(f->streams[i].building);
    free(f->streams[i].segs);
  }
  for (size_t i = 0; i < f->ndnames; i++) free(f->dnames[i]);
  free(f->dnames);
  f->dnames = NULL;
  f->ndnames = 0;
  free(f->streams);
  f->streams = NULL;
  f->nstreams = 0;
  for (size_t i = 0; i < f->nsrcs; i++) {
    dsource *s = &f->srcs[i];
    if (s->mapped) munmap(s->base, s->len);
    else free(s->base);
    free(s->name);
  }
  free(f->srcs);
  f->srcs = NULL;
  f->nsrcs = 0;
  free(f->order);
  free(f->meta);
  f->meta = NULL;
  f->nmeta = f->metacap = 0;
  free(f->attrs);
  free(f->attr_off);
  free(f->lays);
  free(f->ids);
  free(f->note);
  f->order = NULL;
  f->attrs = NULL;
  f->attr_off = NULL;
  f->lays = NULL;
  f->ids = NULL;
  f->note = NULL;
  f->nattrs = f->nids = f->norder = 0;
  f->open = 0;
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
  memset(&a[f->nattrs], 0, sizeof *a);
  memcpy(&a[f->nattrs], src, size < sizeof *a ? size : sizeof *a);
  o[f->nattrs] = off;
  f->nattrs = n;
  return 0;
}

static int add_ids(dfile *f, size_t attr, const unsigned char *p, size_t n) {
  if (n == 0) return 0;
  if (n > ((size_t)1 << 24)) return -1;
  id_entry *v = realloc(f->ids, (f->nids + n) * sizeof *v);
  if (!v) return -1;
  f->ids = v;
  for (size_t i = 0; i < n; i++)
    v[f->nids + i] = (id_entry){ pl_u64at(p + 8 * i), attr, 0 };
  f->nids += n;
  return 0;
}

static int cmp_id(const void *a, const void *b) {
  uint64_t x = ((const id_entry *)a)->id, y = ((const id_entry *)b)->id;
  return x < y ? -1 : x > y;
}

int pl_data_payload(const unsigned char *p, size_t size, uint64_t *extra) {
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

size_t pl_data_offset(const dfile *f, const dstream *s, size_t at, int *inner) {
  *inner = 0;
  if (!s->inflated) return s->data_off + at;
  size_t lo = 0, hi = s->nsegs;        /* the last segment with .at <= at */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->segs[mid].at <= at) lo = mid + 1;
    else hi = mid;
  }
  (void)f;
  if (lo == 0) return s->data_off + at;
  const segment *g = &s->segs[lo - 1];
  *inner = g->inner;
  return g->inner ? g->file_off : g->file_off + (at - g->at);
}

const char *pl_data_where(lua_State *L, const dfile *f, const dstream *s, size_t at) {
  int inner;
  char h[20];
  size_t off = pl_data_offset(f, s, at, &inner);
  const char *file = s->src ? f->srcs[s->src].name : NULL;
  return lua_pushfstring(L, "%s%soffset %s%s", file ? file : "", file ? " at " : "",
                         pl_hex(h, off),
                         inner ? " (a record the compressed record there holds)" : "");
}

/* ---- sources ---- */

/* Maps (or, when it cannot be mapped, reads) the file at path as a new
** source: its index, or -1 with *err set. A directory gives -2. */
static long add_source(dfile *f, const char *path, int *err) {
  dsource *v = realloc(f->srcs, (f->nsrcs + 1) * sizeof *v);
  if (!v) { *err = ENOMEM; return -1; }
  f->srcs = v;
  dsource *s = &v[f->nsrcs];
  memset(s, 0, sizeof *s);
  s->name = strdup(path);
  if (!s->name) { *err = ENOMEM; return -1; }
  f->nsrcs++;                           /* freed with the file from here on */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) { *err = errno; return -1; }
  struct stat st;
  if (fstat(fd, &st) < 0) { *err = errno; close(fd); return -1; }
  if (S_ISDIR(st.st_mode)) { close(fd); return -2; }
  if (S_ISREG(st.st_mode)) {
    s->len = (size_t)st.st_size;
    if (s->len) {
      /* populated at once: the framing check reads every page anyway, and
      ** one mmap maps them faster than a fault per page */
      void *m = mmap(NULL, s->len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (m != MAP_FAILED) {
        s->base = m;
        s->mapped = 1;
        madvise(m, s->len, MADV_SEQUENTIAL);
        close(fd);
        return (long)f->nsrcs - 1;
      }
    }
  }
  /* a pipe, a terminal, a file that cannot be mapped: read to the end */
  size_t cap = 0;
  s->len = 0;
  for (;;) {
    if (cap - s->len < 65536) {
      size_t want = cap ? 2 * cap : 1 << 20;
      unsigned char *b = realloc(s->base, want);
      if (!b) { *err = ENOMEM; close(fd); return -1; }
      s->base = b;
      cap = want;
    }
    ssize_t n = read(fd, s->base + s->len, cap - s->len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { *err = errno; close(fd); return -1; }
    if (n == 0) break;
    s->len += (size_t)n;
  }
  close(fd);
  return (long)f->nsrcs - 1;
}

static dstream *add_stream(dfile *f, size_t src, size_t off, size_t end) {
  dstream *v = realloc(f->streams, (f->nstreams + 1) * sizeof *v);
  if (!v) return NULL;
  f->streams = v;
  dstream *s = &v[f->nstreams++];
  memset(s, 0, sizeof *s);
  s->src = src;
  s->data_off = off;
  s->rec = f->srcs[src].base + off;
  s->rec_len = end - off;
  return s;
}

/* ---- the header ---- */

/* Attrs of the normal layout: attr_size bytes each, the last 16 an
** {offset, size} section of their ids. */
static int read_attrs(lua_State *L, dfile *f, const char *path) {
  const dsource *src = &f->srcs[0];
  const unsigned char *h = src->base;
  uint64_t attr_size = pl_u64at(h + 16);
  uint64_t off = pl_u64at(h + 24), size = pl_u64at(h + 32);
  char a1[20], a2[20];
  if (attr_size < ATTR_SIZE_VER0 + 16 || attr_size > 4096)
    return refuse(L, path, "header at offset 0x10: attr_size %s is not a perf_event_attr size",
                  pl_hex(a1, attr_size));
  if (!inside(src->len, off, size) || size % attr_size)
    return refuse(L, path, "attrs section at offset %s (%s bytes) runs past the end of the "
                  "file or is not a whole number of attrs", pl_hex(a1, off), pl_hex(a2, size));
  if (size / attr_size > MAX_ATTRS)
    return refuse(L, path, "attrs section at offset %s: too many attrs", pl_hex(a1, off));
  for (uint64_t i = 0; i < size / attr_size; i++) {
    size_t a = (size_t)(off + i * attr_size);
    uint64_t ioff = pl_u64at(src->base + a + attr_size - 16);
    uint64_t isize = pl_u64at(src->base + a + attr_size - 8);
    if (!inside(src->len, ioff, isize) || isize % 8)
      return refuse(L, path, "attr at offset %s: its ids section runs past the end of the file",
                    pl_hex(a1, a));
    if (add_attr(f, src->base + a, a, (size_t)attr_size - 16) < 0 ||
        add_ids(f, f->nattrs - 1, src->base + ioff, (size_t)(isize / 8)) < 0)
      return out_of_memory(L, path);
  }
  return 0;
}

/* Feature sections: an {offset, size} per bit set, after the data. A
** section outside the file is skipped, and noted (perf warns and goes on). */
static void read_features(lua_State *L, dfile *f, size_t at) {
  const dsource *src = &f->srcs[0];
  const unsigned char *bits = src->base + 72;
  char h[20];
  for (int b = 1; b < 256; b++) {
    if (!((bits[b / 8] >> (b % 8)) & 1)) continue;
    if (!inside(src->len, at, 16)) {
      note(L, f, "%s: the feature index at offset %s runs past the end of the file: "
           "feature %d and those after it are not read", src->name, pl_hex(h, at), b);
      return;
    }
    uint64_t off = pl_u64at(src->base + at), size = pl_u64at(src->base + at + 8);
    if (inside(src->len, off, size)) {
      f->feat_off[b] = (size_t)off;
      f->feat_size[b] = (size_t)size;
    } else {
      note(L, f, "%s: feature %d (index entry at offset %s) runs past the end of the "
           "file: not read", src->name, b, pl_hex(h, at));
    }
    at += 16;
  }
}

/* The header of source 0: the data section's stream, the attrs and the
** features. 0, or -1 with nil, message, errno pushed. */
static int read_header(lua_State *L, dfile *f, const char *path) {
  const dsource *src = &f->srcs[0];
  const unsigned char *h = src->base;
  size_t len = src->len;
  char a1[20], a2[20];
  if (len < PIPE_HEADER_SIZE)
    return refuse(L, path, "not a perf.data file: %I bytes, a header takes 16 (at offset 0x0)",
                  (lua_Integer)len);
  uint64_t magic = pl_u64at(h);
  if (magic == __builtin_bswap64(MAGIC2))
    return refuse(L, path, "the file was written in the other byte order (magic at offset "
                  "0x0); this reader takes files in this machine's byte order: convert it "
                  "where it was recorded");
  if (memcmp(h, "PERFFILE", 8) == 0)
    return refuse(L, path, "a version 1 perf.data file (magic at offset 0x0): only "
                  "PERFILE2 files are read");
  if (magic != MAGIC2)
    return refuse(L, path, "not a perf.data file (no PERFILE2 magic at offset 0x0)");
  uint64_t hsize = pl_u64at(h + 8);
  if (hsize == PIPE_HEADER_SIZE) {
    f->pipe = 1;
    return add_stream(f, 0, PIPE_HEADER_SIZE, len) ? 0 : out_of_memory(L, path);
  }
  if (hsize < FILE_HEADER_SIZE || len < FILE_HEADER_SIZE)
    return refuse(L, path, "header at offset 0x0: %s",
                  len < FILE_HEADER_SIZE ? "truncated" : "its size is neither 16 nor >= 104");
  uint64_t doff = pl_u64at(h + 40), dsize = pl_u64at(h + 48);
  if (doff < FILE_HEADER_SIZE || doff > len)
    return refuse(L, path, "the data section (at offset %s) lies outside the file",
                  pl_hex(a1, doff));
  if (read_attrs(L, f, path) < 0) return -1;
  size_t end = (size_t)(doff + dsize);
  if (dsize == 0) {
    /* perf writes the header first with data size 0 and again at the end */
    end = len;
    note(L, f, "%s: the data size field is 0 which is unexpected: was 'perf record' "
         "properly terminated? The records from offset %s to the end of the file are read, "
         "the feature sections are not", path, pl_hex(a1, doff));
  } else if (!inside(len, doff, dsize)) {
    end = len;
    note(L, f, "%s: the file ends inside its data section (%s bytes at offset %s): it was "
         "cut; the records up to its end are read, the feature sections are not",
         path, pl_hex(a1, dsize), pl_hex(a2, doff));
  } else {
    read_features(L, f, end);
  }
  return add_stream(f, 0, (size_t)doff, end) ? 0 : out_of_memory(L, path);
}

/* ---- framing ---- */

/* Checks the framing of the record at `at` of stream s: its size plus
** what follows it, or 0 with why on the stack. */
static size_t frame(lua_State *L, const dstream *s, size_t at) {
  const unsigned char *p = s->rec + at;
  size_t n = s->rec_len - at;
  if (n < 8) {
    lua_pushfstring(L, "truncated record header (%d bytes are left)", (int)n);
    return 0;
  }
  size_t size = pl_u16at(p + 6);
  if (size < 8) {
    lua_pushfstring(L, "a record of size %d, below a header's 8 bytes", (int)size);
    return 0;
  }
  if (size > n) {
    lua_pushfstring(L, "truncated record: its header says %d bytes, %I are left",
                    (int)size, (lua_Integer)n);
    return 0;
  }
  uint64_t extra;
  if (pl_data_payload(p, size, &extra) < 0 || extra > n - size) {
    lua_pushliteral(L, "a record whose payload runs past the end of the data");
    return 0;
  }
  return size + (size_t)extra;
}

/* Keeps where a header_feature or event_update record is, for f:info(). */
static int add_meta(dfile *f, size_t stream, size_t at) {
  if (f->nmeta == f->metacap) {
    size_t want = f->metacap ? 2 * f->metacap : 16;
    dpos *v = realloc(f->meta, want * sizeof *v);
    if (!v) return -1;
    f->meta = v;
    f->metacap = want;
  }
  f->meta[f->nmeta++] = (dpos){ 0, at, stream };
  return 0;
}

/* Checks the framing of every record of stream s, stopping at the first
** that does not frame; in pipe mode collects the attrs. 0, or -1 with
** nil, message, errno pushed (out of memory). */
static int walk(lua_State *L, dfile *f, dstream *s, const char *path) {
  size_t off = 0, self = (size_t)(s - f->streams);
  s->nrecords = s->ncompressed = 0;
  while (f->nmeta && f->meta[f->nmeta - 1].stream == self) f->nmeta--;   /* walked again */
  while (off < s->rec_len) {
    const unsigned char *p = s->rec + off;
    size_t n = frame(L, s, off);
    if (!n) { stop(L, f, s, off); break; }
    size_t size = pl_u16at(p + 6);
    uint32_t type = pl_u32at(p);
    if (type == U_COMPRESSED || type == U_COMPRESSED2) s->ncompressed++;
    if ((type == U_HEADER_FEATURE || type == U_EVENT_UPDATE) && add_meta(f, self, off) < 0)
      return out_of_memory(L, path);
    if (f->pipe && type == U_HEADER_ATTR) {
      uint32_t asize = size >= 16 ? pl_u32at(p + 12) : 0;
      if (asize == 0) asize = ATTR_SIZE_VER0;
      if (size < 8 + ATTR_SIZE_VER0 || asize > size - 8) {
        lua_pushliteral(L, "a header_attr record whose attr does not fit in it");
        stop(L, f, s, off);
        break;
      }
      int inner;
      size_t foff = pl_data_offset(f, s, off, &inner);
      if (add_attr(f, p + 8, inner ? foff : foff + 8, asize) < 0 ||
          add_ids(f, f->nattrs - 1, p + 8 + asize, (size - 8 - asize) / 8) < 0)
        return out_of_memory(L, path);
    }
    off += n;
    s->nrecords++;
  }
  return 0;
}

/* ---- compressed records ---- */

static int add_segment(dstream *s, size_t at, size_t file_off, int inner) {
  if (s->nsegs) {                   /* one segment for a run of plain records */
    segment *g = &s->segs[s->nsegs - 1];
    if (!inner && !g->inner && g->file_off + (at - g->at) == file_off) return 0;
    if (g->at == at) { g->file_off = file_off; g->inner = inner; return 0; }
  }
  if (s->nsegs == s->segcap) {
    size_t want = s->segcap ? 2 * s->segcap : 64;
    segment *v = realloc(s->segs, want * sizeof *v);
    if (!v) return -1;
    s->segs = v;
    s->segcap = want;
  }
  s->segs[s->nsegs++] = (segment){ at, file_off, inner };
  return 0;
}

/* The HEADER_COMPRESSED feature (perf's write_compressed: u32 version,
** type, level, ratio, mmap_len) at p: checks the type, sets *limit. */
static int compressed_feature(lua_State *L, const char *path, size_t off,
                              const unsigned char *p, size_t n, size_t *limit) {
  char h[20];
  if (n < 20) return 0;         /* no mmap_len: the default limit */
  uint32_t type = pl_u32at(p + 4), mmap_len = pl_u32at(p + 16);
  if (type != COMP_ZSTD)
    return refuse(L, path, "the compressed feature (at offset %s) names compression "
                  "type %d; only zstd (1) is read", pl_hex(h, off), (int)type);
  *limit = mmap_len ? (mmap_len < INFLATE_MAX ? mmap_len : INFLATE_MAX) : INFLATE_DEFAULT;
  return 0;
}

typedef struct inflater {
  unsigned char *o;             /* the records so far, then a partial one */
  size_t len, cap, done, limit;
} inflater;

/* Appends plain record p (n bytes) before the partial record pending. */
static int put_plain(inflater *z, dstream *s, const unsigned char *p, size_t n,
                     size_t off) {
  if (z->cap - z->len < n) {
    size_t want = z->len + n > 2 * z->cap ? z->len + n : 2 * z->cap;
    unsigned char *q = realloc(z->o, want ? want : 1);
    if (!q) return -1;
    z->o = s->building = q;
    z->cap = want;
  }
  memmove(z->o + z->done + n, z->o + z->done, z->len - z->done);
  memcpy(z->o + z->done, p, n);
  if (add_segment(s, z->done, off, 0) < 0) return -1;
  z->done += n;
  z->len += n;
  return 0;
}

/* Decompresses the compressed record p (size bytes, at file offset off):
** 0; 1 with why on the stack (reading stops there); -1 nil, message,
** errno pushed. */
static int put_compressed(lua_State *L, dfile *f, dstream *s, inflater *z,
                          const unsigned char *p, size_t size, size_t off,
                          const char *path) {
  const unsigned char *src = p + 8;
  uint64_t srclen = size - 8;
  if (pl_u32at(p) == U_COMPRESSED2) {
    if (size < 16 || pl_u64at(p + 8) > size - 16) {
      lua_pushliteral(L, "a compressed record whose data_size runs past the record");
      return 1;
    }
    src = p + 16;
    srclen = pl_u64at(p + 8);
  }
  const char *why;
  if (!f->zs) {
    int err;
    f->zs = pl_zstd_new(&why, &err);
    if (!f->zs) {
      char h[20];
      lua_pushfstring(L, "perf.data.open \"%s\": the compressed record at offset %s "
                      "needs zstd: %s", path, pl_hex(h, off), why);
      pl_fail(L, err, lua_tostring(L, -1), err == ENOMEM ? NULL :
              "install zstd's library (Debian and Ubuntu: libzstd1; Fedora: "
              "libzstd), or name its file in PERF_LUA_LIBZSTD");
      lua_remove(L, -4);
      return -1;
    }
  }
  int rc = pl_zstd_inflate(f->zs, src, (size_t)srclen, &z->o, &z->len, &z->cap, z->limit, &why);
  s->building = z->o;                   /* before any Lua call: it may raise */
  if (rc < 0) {
    if (strcmp(why, "out of memory") == 0) return out_of_memory(L, path);
    if (strcmp(why, "more than limit") == 0)
      lua_pushfstring(L, "it decompresses to more than %I bytes, the ring size the "
                      "compressed feature gives", (lua_Integer)z->limit);
    else
      lua_pushfstring(L, "cannot decompress it: %s", why);
    return 1;
  }
  if (z->len > PL_DATA_MAX_INFLATED) {
    lua_pushfstring(L, "the records decompress to more than %I bytes",
                    (lua_Integer)PL_DATA_MAX_INFLATED);
    return 1;
  }
  /* the records it completes come at its place */
  if (add_segment(s, z->done, off, 1) < 0) return out_of_memory(L, path);
  while (z->len - z->done >= 8) {
    size_t rsize = pl_u16at(z->o + z->done + 6);
    uint64_t extra;
    if (rsize < 8 || rsize > z->len - z->done) break;   /* walk() says why */
    if (pl_data_payload(z->o + z->done, rsize, &extra) < 0) extra = 0;
    if (extra > z->len - z->done - rsize) break;
    z->done += rsize + (size_t)extra;
  }
  return 0;
}

/* Rebuilds stream s with its compressed records decompressed. 0, or -1
** with nil, message, errno pushed. */
static int inflate_stream(lua_State *L, dfile *f, dstream *s, const char *path) {
  inflater z = { NULL, 0, 0, 0, INFLATE_DEFAULT };
  if (f->feat_off[FEAT_COMPRESSED] &&
      compressed_feature(L, path, f->feat_off[FEAT_COMPRESSED],
                         f->srcs[0].base + f->feat_off[FEAT_COMPRESSED],
                         f->feat_size[FEAT_COMPRESSED], &z.limit) < 0)
    return -1;
  int rc = 0;
  size_t stop_at = 0, last = 0;
  for (size_t at = 0; at < s->rec_len;) {
    const unsigned char *p = s->rec + at;
    size_t off = s->data_off + at, size = pl_u16at(p + 6);
    uint64_t extra;
    pl_data_payload(p, size, &extra);             /* the framing was checked */
    at += size + (size_t)extra;
    uint32_t type = pl_u32at(p);
    if (type == U_HEADER_FEATURE && size >= 16 && pl_u64at(p + 8) == FEAT_COMPRESSED &&
        compressed_feature(L, path, off, p + 16, size - 16, &z.limit) < 0)
      { rc = -1; break; }
    if (type != U_COMPRESSED && type != U_COMPRESSED2) {
      if (put_plain(&z, s, p, size + (size_t)extra, off) < 0)
        { rc = out_of_memory(L, path); break; }
      continue;
    }
    last = off;
    rc = put_compressed(L, f, s, &z, p, size, off, path);
    if (rc) { stop_at = off; break; }
  }
  pl_zstd_free(f->zs);                    /* its part is done */
  f->zs = NULL;
  if (rc < 0) { free(z.o); s->building = NULL; return -1; }
  if (!z.o && !(z.o = s->building = malloc(1))) return out_of_memory(L, path);
  s->inflated = z.o;
  s->building = NULL;
  s->rec = z.o;
  s->rec_len = z.done;
  if (rc == 1 || z.done != z.len) {
    if (rc != 1)
      lua_pushfstring(L, "the compressed records end inside a record (%I bytes of it)",
                      (lua_Integer)(z.len - z.done));
    /* where: the compressed record that failed, or the last one */
    char h[20];
    note(L, f, "%s: reading stopped at the compressed record at offset %s: %s",
         f->srcs[s->src].name, pl_hex(h, rc == 1 ? stop_at : last), lua_tostring(L, -1));
    lua_pop(L, 1);
    if (!f->stopped) {
      f->stopped = 1;
      f->stop_off = rc == 1 ? stop_at : last;
      f->stop_src = s->src;
    }
  }
  return 0;
}

/* ---- a directory's data.N files ---- */

static int cmp_name(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  long nx = strtol(x + 5, NULL, 10), ny = strtol(y + 5, NULL, 10);
  return nx < ny ? -1 : nx > ny;
}

/* Adds a source and a stream for each data.N file in dir (perf's
** perf_data__open_dir: the entries named data.*, those of size 0 left
** out). 0, or -1 with nil, message, errno pushed. */
static int open_data_files(lua_State *L, dfile *f, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    lua_pushfstring(L, "perf.data.open \"%s\"", dir);
    pl_fail(L, errno, lua_tostring(L, -1), NULL);
    lua_remove(L, -4);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) && f->ndnames < MAX_DATA_FILES) {     /* no Lua call while d is open */
    const char *s = e->d_name;
    if (strncmp(s, "data.", 5) || !s[5] || strspn(s + 5, "0123456789") != strlen(s + 5))
      continue;
    char **v = realloc(f->dnames, (f->ndnames + 1) * sizeof *v);
    if (!v) { rc = -1; break; }
    f->dnames = v;
    if (!(v[f->ndnames] = strdup(s))) { rc = -1; break; }
    f->ndnames++;
  }
  closedir(d);
  if (rc == 0 && f->ndnames) qsort(f->dnames, f->ndnames, sizeof *f->dnames, cmp_name);
  for (size_t i = 0; rc == 0 && i < f->ndnames; i++) {
    const char *name = f->dnames[i];
    lua_pushfstring(L, "%s/%s", dir, name);
    int err = 0;
    long src = add_source(f, lua_tostring(L, -1), &err);
    lua_pop(L, 1);
    if (src < 0) {
      if (err == ENOMEM) rc = -1;
      else note(L, f, "%s/%s: %s (not read)", dir, name, strerror(err ? err : EISDIR));
      continue;
    }
    const dsource *s = &f->srcs[src];
    if (s->len && !add_stream(f, (size_t)src, 0, s->len)) rc = -1;
  }
  for (size_t i = 0; i < f->ndnames; i++) free(f->dnames[i]);
  free(f->dnames);
  f->dnames = NULL;
  f->ndnames = 0;
  return rc < 0 ? out_of_memory(L, dir) : 0;
}

/* ---- a directory's records in time order ---- */

static int cmp_pos(const void *a, const void *b) {
  const dpos *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* f->order: every record of every stream, by time (a record without one
** keeps the time of the record before it in its stream, so it stays
** behind that one), as perf's ordered events deliver them. */
static int build_order(dfile *f) {
  size_t n = 0;
  for (size_t i = 0; i < f->nstreams; i++) n += f->streams[i].nrecords;
  f->order = malloc((n ? n : 1) * sizeof *f->order);
  if (!f->order) return -1;
  size_t k = 0;
  for (size_t i = 0; i < f->nstreams; i++) {
    const dstream *s = &f->streams[i];
    uint64_t last = 0;
    for (size_t at = 0; at < s->rec_len && k < n;) {
      const unsigned char *p = s->rec + at;
      size_t size = pl_u16at(p + 6);
      uint64_t extra, t;
      pl_data_payload(p, size, &extra);
      const char *why;
      long a = pl_u32at(p) < U_HEADER_ATTR ? pl_data_attr(f, p, size, &why) : -1;
      if (a >= 0 && pl_record_time(&f->lays[a], p, size, &t)) last = t;
      f->order[k++] = (dpos){ last, at, i };
      at += size + (size_t)extra;
    }
  }
  f->norder = k;
  qsort(f->order, k, sizeof *f->order, cmp_pos);
  return 0;
}

/* ---- opening ---- */

static int build_layouts(dfile *f) {
  f->lays = calloc(f->nattrs ? f->nattrs : 1, sizeof *f->lays);
  if (!f->lays) return -1;
  for (size_t i = 0; i < f->nattrs; i++) {
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
  pl_layouts_init(&f->set, f->lays, f->nattrs, &why);
  if (f->nids) qsort(f->ids, f->nids, sizeof *f->ids, cmp_id);
  return 0;
}

/* Frames (and decompresses) stream s. */
static int read_stream(lua_State *L, dfile *f, dstream *s, const char *path) {
  if (walk(L, f, s, path) < 0) return -1;
  f->compressed += s->ncompressed;
  if (!s->ncompressed) return 0;
  if (inflate_stream(L, f, s, path) < 0) return -1;
  /* again on the records as rebuilt: pipe mode's attrs anew */
  if (f->pipe) {
    free(f->ids);
    f->ids = NULL;
    f->nattrs = f->nids = 0;
  }
  return walk(L, f, s, path);
}

/* The directory of the file at path ("." when it names none). */
static const char *dir_of(lua_State *L, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return lua_pushliteral(L, ".");
  return lua_pushlstring(L, path, slash == path ? 1 : (size_t)(slash - path));
}

int pl_data_load(lua_State *L, dfile *f, const char *path) {
  int err = 0;
  int top = lua_gettop(L);
  long src = add_source(f, path, &err);
  const char *dir = NULL;
  if (src == -2) {                      /* perf record --threads: a directory */
    dir = path;
    pl_data_free(f);
    path = lua_pushfstring(L, "%s/data", dir);
    src = add_source(f, path, &err);
  }
  if (src < 0) {
    lua_pushfstring(L, "perf.data.open \"%s\"", path);
    pl_fail(L, src == -2 ? EISDIR : err, lua_tostring(L, -1), NULL);
    lua_remove(L, -4);
    return -1;
  }
  if (read_header(L, f, path) < 0) return -1;
  if (!f->pipe && f->feat_off[FEAT_DIR_FORMAT]) {
    f->dir = 1;
    if (!dir) dir = dir_of(L, path);
    if (open_data_files(L, f, dir) < 0) return -1;
    if (f->nstreams == 1)
      note(L, f, "%s: the header's dir_format says the samples are in data.N files "
           "beside it (perf record --threads), and there are none", path);
  }
  for (size_t i = 0; i < f->nstreams; i++)
    if (read_stream(L, f, &f->streams[i], path) < 0) return -1;
  for (size_t i = 0; i < f->nstreams; i++) f->nrecords += f->streams[i].nrecords;
  if (build_layouts(f) < 0 || (f->nstreams > 1 && build_order(f) < 0))
    return out_of_memory(L, path);
  lua_settop(L, top);
  f->open = 1;
  return 0;
}
