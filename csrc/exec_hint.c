/*
** exec_hint.c: why a command could not run, as advice (the hint of
** perf.stat's and perf.record's "cannot run" failures).
**
** execve(2) answers ENOENT both for a file that does not exist and for one
** whose interpreter does not: the #! line's program (binfmt_script), or an
** ELF's loader (PT_INTERP). The child names a file that exists though its
** exec said ENOENT; its #! line then names what is missing, as shells say
** "bad interpreter".
*/
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "perf_core.h"

/* Pushes the hint for a file that exists though execve said ENOENT. */
static const char *missing_interpreter(lua_State *L, const char *found) {
  char line[256];
  ssize_t n;
  size_t i, end;
  int fd = open(found, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return lua_pushfstring(L, "%s exists, but what it needs to run does not", found);
  do n = read(fd, line, sizeof line - 1); while (n < 0 && errno == EINTR);
  close(fd);
  if (n < 2 || line[0] != '#' || line[1] != '!')
    return lua_pushfstring(L, "%s exists, but its ELF interpreter (the dynamic loader it "
                           "names) does not", found);
  line[n] = '\0';
  /* the kernel's reading: blanks after "#!", the name up to a blank or the end of the line */
  for (i = 2; line[i] == ' ' || line[i] == '\t'; i++) {}
  for (end = i; line[end] && line[end] != ' ' && line[end] != '\t' && line[end] != '\n'; end++) {}
  if (end > i && line[end - 1] == '\r')
    return lua_pushfstring(L, "bad interpreter: %s's #! line ends with a carriage return "
                           "(DOS line endings): convert it with sed -i 's/\\r$//' %s",
                           found, found);
  line[end] = '\0';
  return lua_pushfstring(L, "bad interpreter: %s names %s on its #! line, which does not exist",
                         found, line + i);
}

const char *pl_exec_hint(lua_State *L, int err, const char *file, const char *found) {
  switch (err) {
  case ENOENT:
    if (found && *found) return missing_interpreter(L, found);
    return strchr(file, '/') ? "no such file" : "not found in PATH";
  case EACCES:
    return "not an executable file (or a directory, or on a noexec mount)";
  case ENOEXEC:
    return "the kernel cannot execute this file";
  default:
    return NULL;
  }
}
