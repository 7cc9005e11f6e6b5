/*
** ringbuf.c: record framing over the data area (see ringbuf.h).
*/
#include <string.h>

#include "ringbuf.h"

void pl_rbuf_copy(const pl_rbuf *rb, uint64_t pos, void *dst, size_t n) {
  uint64_t mask = rb->size - 1;
  size_t off = (size_t)(pos & mask);
  size_t first = (size_t)(rb->size - off);
  if (first > n) first = n;
  memcpy(dst, rb->data + off, first);
  if (n > first) memcpy((unsigned char *)dst + first, rb->data, n - first);
}

/* header.size of the record at pos (the header may wrap if a writer ever
** broke 8-byte alignment; copying it costs nothing). */
static size_t header_size(const pl_rbuf *rb, uint64_t pos) {
  size_t off = (size_t)(pos & (rb->size - 1));
  const unsigned char *h = rb->data + off + 6;
  unsigned char copy[8];
  if (off + 8 > rb->size) {
    pl_rbuf_copy(rb, pos, copy, 8);
    h = copy + 6;
  }
  return (size_t)h[0] | ((size_t)h[1] << 8);
}

int pl_rbuf_next(const pl_rbuf *rb, uint64_t head, uint64_t pos,
                 const unsigned char **rec, size_t *len) {
  uint64_t avail = head - pos;
  *rec = NULL;
  *len = 0;
  if (avail == 0) return PL_RBUF_EMPTY;
  if (avail > rb->size) { *len = avail > SIZE_MAX ? SIZE_MAX : (size_t)avail; return PL_RBUF_ESYNC; }
  if (avail < 8) { *len = (size_t)avail; return PL_RBUF_EOVER; }
  size_t size = header_size(rb, pos);
  *len = size;
  if (size < 8) return PL_RBUF_ESMALL;
  if (size > avail) return PL_RBUF_EOVER;
  uint64_t mask = rb->size - 1;
  size_t off = (size_t)(pos & mask);
  if (off + size <= rb->size) {
    *rec = rb->data + off;
  } else {
    pl_rbuf_copy(rb, pos, rb->scratch, size);
    *rec = rb->scratch;
  }
  return PL_RBUF_RECORD;
}

uint64_t pl_rbuf_backward_extent(const pl_rbuf *rb, uint64_t head) {
  uint64_t done = 0;
  while (done + 8 <= rb->size) {
    size_t size = header_size(rb, head + done);
    if (size < 8 || size > rb->size - done) break;
    done += size;
  }
  return done;
}

const char *pl_rbuf_strerror(int code) {
  switch (code) {
  case PL_RBUF_ESYNC: return "the reader lost sync (more unread bytes than the ring holds)";
  case PL_RBUF_ESMALL: return "record header size below 8";
  case PL_RBUF_EOVER: return "record larger than the bytes the kernel published";
  }
  return "no error";
}
