/*
** core.c: luaopen_perf_core, the only exported symbol, and the only file
** that registers: each file below adds its part to the module table (and
** its methods to the handles' metatables), in an order where every
** metatable exists before a file extends it.
*/
#include <dlfcn.h>
#include <pthread.h>

#include "perf_core.h"
#include "record_push.h"

PL_API int luaopen_perf_core(lua_State *L);

/* Pins this library in memory: it installs an atfork hook and signal
** handlers, which must not outlive its code when Lua closes the state. */
static const char library_anchor = 0;   /* an address inside this library */

static void pin_library(void) {
  Dl_info info;
  if (dladdr(&library_anchor, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* Process-wide setup, once whatever the number of Lua states. */
static void setup_process(void) {
  static int once;
  if (once) return;
  once = 1;
  pin_library();
  pl_self_refresh();
  pthread_atfork(NULL, NULL, pl_self_refresh);
}

int luaopen_perf_core(lua_State *L) {
  setup_process();
  lua_newtable(L);
  pl_open_show(L);        /* the printing metatables: before their users */
  pl_open_attr(L);
  pl_open_event(L);       /* perf.event: first, the others extend it */
  pl_open_group(L);
  pl_open_spawn(L);
  pl_open_util(L);
  pl_open_mount(L);
  pl_open_errors(L);
  pl_open_tracefs(L);
  pl_open_nearest(L);
  pl_open_event_names(L);
  pl_open_consts(L);
  pl_record_push_init(L);
  pl_open_ring(L);        /* perf.ring: before the files that read rings */
  pl_open_ring_iter(L);
  pl_open_ring_write(L);
  pl_open_decode(L);
  pl_open_signal(L);
  pl_open_userpage(L);
  pl_open_profile(L);      /* perf.profile's hook: after the signals */
  pl_open_profile_alloc(L); /* extend the profiler: after it */
  pl_open_profile_time(L);
  pl_open_profile_timer(L);
  pl_open_profile_counters(L);
  pl_open_perfdata(L);    /* perf.data files: reads records as the rings do */
  pl_open_zstd(L);
  pl_open_waiter(L);      /* waits on rings: after them */
  pl_open_stop_signals(L);
  pl_open_attach(L);      /* another process profiled (its own tracer) */
  lua_pushliteral(L, "0.1");
  lua_setfield(L, -2, "version");
  return 1;
}
