/*
** perfdata_file.h: a perf.data file as the reader holds it, shared by
** perfdata_load.c (opening: mapping, framing, decompression, directories),
** perfdata_user.c (the records perf adds itself)
** and perfdata.c (the Lua handle and its iterators), which stands above
** the other two.
**
** A file is one or more byte sources (the header file, mapped or, from a
** pipe, read; each data.N file of a `perf record --threads` directory) and
** one stream of records per source: the data section of the header file,
** each data.N whole. A stream's records are checked once, when the file
** opens: reading stops at the first record that cannot be framed (the
** file was cut or damaged there), and `note` says where and why. The
** records of a compressed stream are rebuilt in `inflated`.
*/
#ifndef PERF_PERFDATA_FILE_H
#define PERF_PERFDATA_FILE_H

#include "ring.h"
#include "zstd.h"

#pragma GCC visibility push(hidden)

#define PL_DATA_MT "perf.data.file"

/* enum perf_user_event_type (tools/lib/perf/include/perf/event.h) */
enum {
  U_HEADER_ATTR = 64, U_HEADER_EVENT_TYPE, U_HEADER_TRACING_DATA,
  U_HEADER_BUILD_ID, U_FINISHED_ROUND, U_ID_INDEX, U_AUXTRACE_INFO,
  U_AUXTRACE, U_AUXTRACE_ERROR, U_THREAD_MAP, U_CPU_MAP, U_STAT_CONFIG,
  U_STAT, U_STAT_ROUND, U_EVENT_UPDATE, U_TIME_CONV, U_HEADER_FEATURE,
  U_COMPRESSED, U_FINISHED_INIT, U_COMPRESSED2, U_END
};

typedef struct id_entry {
  uint64_t id;
  size_t attr;
  uint64_t prev;                /* leader sampling: the last value read */
} id_entry;

/* Where the records from `at` on (an offset in a stream's rec) come from:
** the source from file_off on, or (inner) the compressed record at file_off. */
typedef struct segment {
  size_t at, file_off;
  int inner;
} segment;

typedef struct dsource {
  unsigned char *base;          /* the bytes; NULL for an empty file */
  size_t len;
  int mapped;                   /* base is a mapping (else malloc'd) */
  char *name;                   /* for messages: the path */
} dsource;

typedef struct dstream {
  size_t src;                   /* its source */
  size_t data_off;              /* where its records start there */
  const unsigned char *rec;     /* the records read */
  size_t rec_len;
  unsigned char *inflated;      /* compressed records replaced by theirs; or NULL */
  unsigned char *building;      /* inflated while it is built (freed with the
                                ** file if a Lua error ends the open) */
  segment *segs;                /* for inflated: where its records come from */
  size_t nsegs, segcap;
  size_t ncompressed;           /* compressed records walk() saw */
  size_t nrecords;
} dstream;

/* a record of a directory, in time order */
typedef struct dpos {
  uint64_t time;
  size_t at;
  size_t stream;
} dpos;

typedef struct dfile {
  int open;
  int pipe;
  int dir;                      /* the header's dir_format: data.N files */
  int split;                    /* leader sampling: a sample per value read */
  dsource *srcs;
  size_t nsrcs;
  dstream *streams;
  size_t nstreams;
  dpos *order;                  /* several streams: every record by time */
  size_t norder;
  size_t nrecords, compressed;
  size_t nattrs;
  struct pl_attr *attrs;        /* as read, zero-extended */
  size_t *attr_off;             /* where each attr's bytes are */
  pl_layout *lays;              /* one per attr */
  pl_layouts set;
  id_entry *ids;                /* sorted by id */
  size_t nids;
  size_t feat_off[256], feat_size[256];   /* normal layout: sections */
  dpos *meta;                   /* header_feature and event_update records */
  size_t nmeta, metacap;
  char *note;                   /* what was cut, damaged or skipped; or NULL */
  int stopped;                  /* the records stop before their end */
  uint64_t stop_off;            /* ... at this offset of stop_src */
  size_t stop_src;
  pl_zstd *zs;                  /* a stream's zstd state, while it opens */
  char **dnames;                /* a directory's data.N names, while it opens */
  size_t ndnames;
} dfile;

/* Reads and checks the file at path into f (zeroed): 0, or -1 with
** nil, message, errno pushed. */
int pl_data_load(lua_State *L, dfile *f, const char *path);
void pl_data_free(dfile *f);

/* Bytes after a record that its header.size does not count (the tracing
** data after HEADER_TRACING_DATA, the trace after AUXTRACE): 0, or -1
** when the record is too short to say. */
int pl_data_payload(const unsigned char *p, size_t size, uint64_t *extra);

/* The file offset of the record at `at` of stream s (for a record that
** was compressed: the compressed record's, as perf reports it); *inner
** says which. */
size_t pl_data_offset(const dfile *f, const dstream *s, size_t at, int *inner);
/* Pushes where that record is, for a message: "offset 0x..", the file
** named when it is not the header file. */
const char *pl_data_where(lua_State *L, const dfile *f, const dstream *s, size_t at);

/* The entry of an id, or NULL. */
static inline id_entry *pl_data_id(const dfile *f, uint64_t id) {
  size_t lo = 0, hi = f->nids;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->ids[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < f->nids && f->ids[lo].id == id ? &f->ids[lo] : NULL;
}

/* The attr index for the record at p, or -1 with *why set (inline: the
** samples iterator asks it for every record). */
static inline long pl_data_attr(const dfile *f, const unsigned char *p, size_t size, const char **why) {
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
  const id_entry *e = pl_data_id(f, id);
  if (e) return (long)e->attr;
  *why = "record id matches no event of this file";
  return -1;
}

/* Pushes a record perf adds itself (type >= 64) as a fresh table. */
void pl_data_push_user(lua_State *L, const unsigned char *p, size_t size, size_t off);

/* "0x..." of v, in buf (19 bytes at least) */
const char *pl_hex(char *buf, uint64_t v);

#pragma GCC visibility pop

#endif
