/*
** ringbuf.h: walking the data area of a perf ring buffer, in plain C.
**
** The kernel writes records into a power-of-two data area and publishes
** data_head; the reader owns data_tail. Positions are free-running 64-bit
** byte counts, reduced modulo the size to index the area. Records are
** 8-byte aligned but a body may wrap past the end of the area: such a
** record is reassembled into a scratch buffer (65535 bytes at most, the
** largest header.size).
**
** Nothing here touches data_head or data_tail: the caller loads the head
** (acquire), walks with pl_rbuf_next, decodes, and only then stores the
** tail (release). See ring.c.
*/
#ifndef PERF_RINGBUF_H
#define PERF_RINGBUF_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define PL_RBUF_SCRATCH 65536

typedef struct pl_rbuf {
  const unsigned char *data;    /* the data area (data_offset into the map) */
  uint64_t size;                /* data_size, a power of two */
  unsigned char *scratch;       /* PL_RBUF_SCRATCH bytes */
} pl_rbuf;

enum {
  PL_RBUF_EMPTY = 0,            /* pos == head */
  PL_RBUF_RECORD = 1,           /* *rec, *len set */
  PL_RBUF_ESYNC = -1,           /* head - pos > size: the reader lost sync */
  PL_RBUF_ESMALL = -2,          /* header.size < 8 */
  PL_RBUF_EOVER = -3            /* header.size > head - pos */
};

/*
** The record at `pos`, given the published `head`. On PL_RBUF_RECORD,
** *rec points to header.size contiguous bytes (into the area, or into the
** scratch buffer when the record wraps) and *len = header.size. On an
** error, *len holds the offending size or distance.
*/
int pl_rbuf_next(const pl_rbuf *rb, uint64_t head, uint64_t pos,
                 const unsigned char **rec, size_t *len);

/* Copies n bytes starting at position pos (wrapping) into dst. */
void pl_rbuf_copy(const pl_rbuf *rb, uint64_t pos, void *dst, size_t n);

/*
** Overwrite mode (write_backward): the kernel writes each record below the
** previous one, so the newest record starts at data_head. Walking forward
** from head gives records newest first, until an unwritten (zero) header
** or until the next record would reach past one full area (its bytes were
** overwritten). Returns the number of bytes, from head, that hold whole
** records.
*/
uint64_t pl_rbuf_backward_extent(const pl_rbuf *rb, uint64_t head);

const char *pl_rbuf_strerror(int code);

#pragma GCC visibility pop

#endif
