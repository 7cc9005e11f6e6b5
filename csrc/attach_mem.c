/*
** attach_mem.c: reading another process's memory with process_vm_readv(2)
** (the same rights as ptrace's PTRACE_MODE_ATTACH_REALCREDS). The target
** may be running: a read gives what was there at that moment, and a
** struct read in one call is read in one copy.
*/
#include <errno.h>
#include <sys/uio.h>

#include "attach_parts.h"

int pl_remote_read(pl_remote *r, uint64_t addr, void *buf, size_t n) {
  return pl_remote_read_upto(r, addr, buf, n) == n ? 0 : -1;
}

/* The remote side is cut at page boundaries: process_vm_readv stops at
** the first iovec it cannot read whole, so what lies before an unmapped
** page is still read. */
size_t pl_remote_read_upto(pl_remote *r, uint64_t addr, void *buf, size_t n) {
  enum { PAGE = 4096, MAXIOV = 64 };
  struct iovec remote[MAXIOV];
  if (n == 0 || addr == 0 || addr + n < addr) return 0;
  struct iovec local = { buf, n };
  int k = 0;
  uint64_t at = addr, end = addr + n;
  while (at < end && k < MAXIOV) {
    uint64_t next = (at | (PAGE - 1)) + 1;
    if (next > end || k == MAXIOV - 1) next = end;
    remote[k].iov_base = (void *)(uintptr_t)at;
    remote[k].iov_len = (size_t)(next - at);
    k++;
    at = next;
  }
  ssize_t got;
  r->reads++;
  do got = process_vm_readv(r->pid, &local, 1, remote, (unsigned long)k, 0);
  while (got < 0 && errno == EINTR);
  return got < 0 ? 0 : (size_t)got;
}
