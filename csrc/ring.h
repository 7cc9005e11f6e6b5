/*
** ring.h: the perf.ring handle, shared by the files that read rings.
**
** A ring is a full userdata, created closed (base == NULL) and only then
** given its metatable and its mapping. User values:
**   uv1 = the perf.event it maps (keeps the event, hence the fd, alive)
**   uv2 = a table of the events attached with rb:attach (kept alive too)
** A ring made from bytes (perf.core.stream) has no event: its data area
** is a private copy and its control page a private struct.
*/
#ifndef PERF_RING_H
#define PERF_RING_H

#include <linux/perf_event.h>

#include "perf_core.h"
#include "decode.h"
#include "ringbuf.h"
#include "record_push.h"

#pragma GCC visibility push(hidden)

#define PL_RING_MT "perf.ring"
#define PL_RING_MAXLAYOUTS 4096

typedef struct pl_ring {
  void *base;                   /* the mapping, or the private copy; NULL once closed */
  size_t maplen;                /* bytes mapped (0 for a private copy) */
  struct perf_event_mmap_page *meta;  /* control page */
  struct perf_event_mmap_page own;    /* control page of a private copy */
  pl_rbuf rb;
  pl_event *ev;                 /* the mapped event (uv1 keeps it); NULL for a copy */
  int backward;                 /* write_backward: read-only, read newest first */
  pid_t owner;                  /* process that mapped it */
  size_t pages;                 /* data pages */
  uint64_t lost;                /* sum of PERF_RECORD_LOST.lost consumed */
  uint64_t lost_samples;        /* sum of PERF_RECORD_LOST_SAMPLES.lost */
  uint64_t records;             /* records consumed */
  int hup;                      /* POLLHUP seen */
  pl_layout *layouts;           /* one per event writing here */
  size_t nlayouts;
  pl_layouts set;
  const char *demux_why;        /* why the set cannot be demultiplexed, or NULL */
} pl_ring;

/* The fd of the ring's event, -1 for a byte stream or a closed event. */
static inline int pl_ring_fd(const pl_ring *r) {
  return r->ev ? r->ev->fd : -1;
}

/* The open ring at idx, or raise (closed, wrong type, forked child). */
pl_ring *pl_check_ring(lua_State *L, int idx);
/* The ring at idx (open or not) or raise on a wrong type. */
pl_ring *pl_to_ring(lua_State *L, int idx);
/* The ring at idx (open or not), or NULL. */
pl_ring *pl_test_ring(lua_State *L, int idx);

/* data_head, loaded with acquire ordering (the uapi header asks for an
** smp_rmb() after reading it). */
static inline uint64_t pl_ring_head(const pl_ring *r) {
  return __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
}
/* data_tail, stored with release ordering, after the records before it
** were read (the uapi header: smp_mb() before the data_tail store). */
static inline void pl_ring_set_tail(pl_ring *r, uint64_t tail) {
  __atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}
static inline uint64_t pl_ring_tail(const pl_ring *r) {
  return __atomic_load_n(&r->meta->data_tail, __ATOMIC_RELAXED);
}

/*
** Reads the next record between the tail and `head`, decodes it and
** leaves it in *rec (status and why as pl_decode gives them); updates the
** lost counters. Returns 1 with the record, 0 at `head`, or raises on a
** framing error after resynchronising the tail to the head. The tail is
** NOT advanced: call pl_ring_consume once the record is pushed.
*/
int pl_ring_read(lua_State *L, pl_ring *r, uint64_t head, pl_record *rec,
                 int *status, const char **why);
void pl_ring_consume(pl_ring *r, const pl_record *rec);

/* The event's open ring, pushed (or nil pushed and NULL returned): the
** ring the program mapped, or the header-only one pl_ring_map made. */
pl_ring *pl_event_ring(lua_State *L, int evidx);

/* Maps the event at evidx with `pages` data pages (0: the header page
** alone, for self-monitoring) and pushes the new perf.ring, or pushes
** nil, msg, errno. Returns the number of values pushed. A header-only
** ring of the event gives way to the new one (the kernel accepts one
** size of mapping per event); any other ring of the event raises. */
int pl_ring_map(lua_State *L, int evidx, size_t pages);

/* Pushes a perf.ring reading a private copy of the string at bytes_idx,
** decoded with the n layouts. */
int pl_ring_from_bytes(lua_State *L, int bytes_idx, const pl_layout *lays,
                       size_t n);

/* The decoding layout of an open event: its sample_type, read_format,
** register masks, sample_id_all and id. */
void pl_layout_from_event(const pl_event *ev, pl_layout *l);

/* The sample field (record_push.h) named by the string at idx, or raise
** with a did-you-mean (ring_iter.c). */
int pl_sample_field_check(lua_State *L, int idx);

#pragma GCC visibility pop

#endif
