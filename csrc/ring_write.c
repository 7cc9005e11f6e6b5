/*
** ring_write.c: perf.core.ring_write, draining a ring straight from its
** mapping into a file, as perf record writes its rings.
**
**   bytes, samples, lost, records = core.ring_write(rb, fd_or_file)
**
** The order is the one include/uapi/linux/perf_event.h asks for: data_head
** is loaded with acquire ordering, the records up to it are framed (each
** header.size checked, as the iterators check it) and counted, the bytes
** are written (two segments where the data wraps past the end of the
** area), and only then is data_tail stored with release ordering: the
** kernel never reuses bytes that are not yet in the file.
**
** Invariants:
**   - only whole records are written; a framing error writes nothing,
**     skips what is published (tail = head) and raises, as rb:records;
**   - a write error leaves the ring unconsumed and the file's offset and
**     size where they were (a partial write is taken back: lseek and
**     ftruncate), so a caller that keeps the data section's size has it
**     right either way;
**   - the ring's own counts (rb:lost(), rb:stats().records) advance as
**     they do when the iterators consume records.
*/
#include <errno.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ring.h"

typedef struct counts {
  uint64_t samples, lost, lost_samples, records;
} counts;

/* Frames and counts the records in [tail, head). Returns 0 or the
** pl_rbuf error code, with *at and *len naming the offending record. */
static int scan(const pl_ring *r, uint64_t tail, uint64_t head, counts *c,
                uint64_t *at, size_t *len) {
  for (uint64_t pos = tail; pos != head;) {
    const unsigned char *p;
    int rc = pl_rbuf_next(&r->rb, head, pos, &p, len);
    if (rc < 0) { *at = pos; return rc; }
    uint32_t type = pl_u32at(p);
    if (type == PL_REC_SAMPLE) c->samples++;
    else if (type == PL_REC_LOST && *len >= 24) c->lost += pl_u64at(p + 16);
    else if (type == PL_REC_LOST_SAMPLES && *len >= 16) c->lost_samples += pl_u64at(p + 8);
    c->records++;
    pos += *len;
  }
  return 0;
}

/* Writes the iovecs whole, resuming after partial writes and EINTR.
** Returns 0, or the errno with *done set to the bytes written. */
static int write_all(int fd, struct iovec *iov, int n, size_t *done) {
  *done = 0;
  while (n > 0) {
    ssize_t k = writev(fd, iov, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (k == 0) return EIO;     /* no progress and no error: not a file we can fill */
    *done += (size_t)k;
    while (n > 0 && (size_t)k >= iov->iov_len) {
      k -= (ssize_t)iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + k;
      iov->iov_len -= (size_t)k;
    }
  }
  return 0;
}

static const char *write_hint(int err) {
  switch (err) {
  case EBADF: return "the file descriptor is closed or not open for writing";
  case ENOSPC: return "the file system is full";
  case EFBIG: return "the file grew past the size limit (ulimit -f)";
  case EPIPE: return "the reading end of the pipe is closed";
  case EROFS: return "the file system is read-only";
  }
  return NULL;
}

/* The fd at idx: an integer, nil (-1: count and consume only) or an open
** Lua file, flushed so that what it buffered comes first. */
static int target_fd(lua_State *L, int idx, FILE **stream) {
  *stream = NULL;
  if (lua_isnoneornil(L, idx)) return -1;
  if (lua_isinteger(L, idx)) {
    lua_Integer fd = lua_tointeger(L, idx);
    luaL_argcheck(L, fd >= 0 && fd <= 0x7fffffff, idx, "a file descriptor (0 .. 2^31-1) expected");
    return (int)fd;
  }
  luaL_Stream *s = (luaL_Stream *)luaL_testudata(L, idx, LUA_FILEHANDLE);
  if (!s) luaL_typeerror(L, idx, "file descriptor, file or nil");
  if (!s->closef) luaL_error(L, "attempt to use a closed file");
  *stream = s->f;
  return fileno(s->f);
}

/* perf.core.ring_write(rb, fd | file | nil) -> bytes, samples, lost,
** records | nil, msg, errno */
static int l_ring_write(lua_State *L) {
  pl_ring *r = pl_check_ring(L, 1);    /* raises in a forked child */
  FILE *stream;
  int fd = target_fd(L, 2, &stream);
  if (r->backward)
    return luaL_error(L, "core.ring_write reads a forward ring; this one is in overwrite mode (use rb:snapshot())");
  uint64_t head = pl_ring_head(r), tail = pl_ring_tail(r);
  counts c = { 0, 0, 0, 0 };
  uint64_t at = tail;
  size_t len = 0;
  int rc = head - tail > r->rb.size ? PL_RBUF_ESYNC : scan(r, tail, head, &c, &at, &len);
  if (rc < 0) {
    /* nothing after a bad header can be framed: skip what is published */
    pl_ring_set_tail(r, head);
    return luaL_error(L, "perf ring: %s (at byte %I, size %I); the unread "
                      "%I bytes were discarded", pl_rbuf_strerror(rc),
                      (lua_Integer)at, (lua_Integer)len, (lua_Integer)(head - tail));
  }
  size_t n = (size_t)(head - tail);
  if (fd >= 0 && n > 0) {
    if (stream && fflush(stream) != 0) {
      int err = errno;
      return pl_fail(L, err, "core.ring_write: flushing the file", write_hint(err));
    }
    size_t off = (size_t)(tail & (r->rb.size - 1));
    size_t first = (size_t)r->rb.size - off;
    if (first > n) first = n;
    struct iovec iov[2] = {
      { (void *)(r->rb.data + off), first },
      { (void *)r->rb.data, n - first },    /* the part that wrapped */
    };
    size_t done;
    int err = write_all(fd, iov, n > first ? 2 : 1, &done);
    if (err) {
      /* take back a partial write: the file ends, and the next write
      ** lands, where this one began (best effort: a pipe cannot) */
      if (done > 0) {
        off_t pos = lseek(fd, -(off_t)done, SEEK_CUR);
        if (pos >= 0 && ftruncate(fd, pos) != 0) { /* not a file: nothing to cut */ }
      }
      return pl_fail(L, err, "core.ring_write", write_hint(err));
    }
    if (stream) {
      /* the stream still believes in its old offset: make it look again */
      off_t pos = lseek(fd, 0, SEEK_CUR);
      if (pos >= 0) fseeko(stream, pos, SEEK_SET);
    }
  }
  r->lost += c.lost;
  r->lost_samples += c.lost_samples;
  r->records += c.records;
  pl_ring_set_tail(r, head);
  lua_pushinteger(L, (lua_Integer)n);
  lua_pushinteger(L, (lua_Integer)c.samples);
  lua_pushinteger(L, (lua_Integer)c.lost);
  lua_pushinteger(L, (lua_Integer)c.records);
  return 4;
}

static const luaL_Reg functions[] = {
  { "ring_write", l_ring_write },
  { NULL, NULL }
};

void pl_open_ring_write(lua_State *L) {
  luaL_setfuncs(L, functions, 0);
}
