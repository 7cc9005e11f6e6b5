/*
** sanitizer_env.c: only in a build with AddressSanitizer (`make asan`).
**
** The Lua interpreter is not instrumented, so the sanitizer runtimes come
** in through LD_PRELOAD. Once this library is loaded they are in place in
** this process, and the programs it starts (perf.stat's and perf.record's
** commands, and whatever a script runs with io.popen or os.execute) are
** better without them: they are not what is checked, and would report
** their own leaks at exit. So when the library is loaded, the runtimes'
** entries are taken out of LD_PRELOAD, and the whole former value is kept
** in PERF_LUA_SANITIZER_PRELOAD for a child interpreter that loads this
** build again (it needs them first in its library list).
*/
#if defined(__SANITIZE_ADDRESS__)
#include <stdlib.h>
#include <string.h>

/* 1 if the LD_PRELOAD entry s[0..len) names a sanitizer runtime. */
static int is_runtime(const char *s, size_t len) {
  static const char *const names[] = { "libasan", "libubsan", "libclang_rt." };
  size_t base = len, i;
  while (base > 0 && s[base - 1] != '/') base--;
  for (i = 0; i < sizeof names / sizeof *names; i++) {
    size_t n = strlen(names[i]);
    if (len - base >= n && memcmp(s + base, names[i], n) == 0) return 1;
  }
  return 0;
}

__attribute__((constructor)) static void drop_runtimes(void) {
  const char *old = getenv("LD_PRELOAD");
  char *kept, *out;
  const char *p;
  if (!old || !*old) return;
  kept = malloc(strlen(old) + 1);
  if (!kept) return;
  out = kept;
  /* entries are separated by spaces or colons (ld.so(8)) */
  for (p = old; *p;) {
    size_t len = strcspn(p, " :");
    if (len > 0 && !is_runtime(p, len)) {
      if (out != kept) *out++ = ' ';
      memcpy(out, p, len);
      out += len;
    }
    p += len;
    if (*p) p++;
  }
  *out = '\0';
  if (!getenv("PERF_LUA_SANITIZER_PRELOAD")) setenv("PERF_LUA_SANITIZER_PRELOAD", old, 1);
  if (*kept) setenv("LD_PRELOAD", kept, 1);
  else unsetenv("LD_PRELOAD");
  free(kept);
}
#else
typedef int pl_no_sanitizer_env;  /* ISO C wants something in every file */
#endif
