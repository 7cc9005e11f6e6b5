/*
** counter_read.h: pl_counter_read(), read(2) of a counter as one inline
** system call on x86-64 (the C library's read elsewhere).
**
** Why: a system call leaves the CPU's return predictions behind it
** unreliable, so each function return between the syscall and the Lua VM
** costs a misprediction; the C library's read() wrapper is one such
** return, some 10 ns per counter read on the machines this was measured
** on (see bench/read.lua). Only the counter reads on the hot paths use it.
** Same result and errno as read(2); no cancellation point, which nothing
** here needs.
*/
#ifndef PERF_COUNTER_READ_H
#define PERF_COUNTER_READ_H

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline __attribute__((always_inline))
ssize_t pl_counter_read(int fd, void *buf, size_t len) {
#if defined(__x86_64__)
  long ret;
  /* x86-64 syscall ABI: number in rax, arguments in rdi, rsi, rdx; the
  ** kernel clobbers rcx and r11 and writes the buffer */
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"((long)SYS_read), "D"((long)fd), "S"(buf), "d"(len)
                   : "rcx", "r11", "memory");
  if (ret < 0) {
    errno = (int)-ret;
    return -1;
  }
  return (ssize_t)ret;
#else
  return read(fd, buf, len);
#endif
}

#endif
