/*
** process.c: the process the library runs in. Its pid is kept current
** across fork (core.c installs pl_self_refresh as an atfork hook), so a
** handle can tell a forked child from the process that opened it without
** a system call.
*/
#include <unistd.h>

#include "perf_core.h"

static pid_t self_pid;

pid_t pl_self(void) {
  return self_pid;
}

void pl_self_refresh(void) {
  self_pid = getpid();
}
