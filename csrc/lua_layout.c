/*
** lua_layout.c: the table of lua_layout.h, one row per Lua 5.4 release.
*/
#include <string.h>

#include "lua_layout.h"

/* the fields every 5.4.x release has at the same place */
#define COMMON \
  .L_tt = 8, .L_status = 10, .L_l_G = 24, .L_ci = 32, \
  .CI_func = 0, .CI_previous = 16, .CI_savedpc = 32, .CI_size = 64, \
  .LCL_p = 24, .CCL_f = 24, \
  .P_linedefined = 44, .P_sizecode = 24, .P_sizelineinfo = 28, \
  .P_sizeabslineinfo = 40, .P_code = 64, .P_lineinfo = 88, \
  .P_abslineinfo = 96, .P_source = 112, .P_size = 128, \
  .TS_shrlen = 11, .TS_lnglen = 16, .TS_contents = 24, \
  .TV_tt = 8, .TV_size = 16, \
  .tag_thread = 0x08, .tag_lcl = 0x46, .tag_ccl = 0x66, .tag_lcf = 0x16, \
  .tag_shrstr = 0x04, .tag_lngstr = 0x14, .abslineinfo_mark = -0x80

static const pl_lua_layout layouts[] = {
  { .release = "5.4.0", COMMON, .L_base_ci = 96, .L_nCcalls = 176, .ccalls_down = 1,
    .G_mainthread = 256 },
  { .release = "5.4.1", COMMON, .L_base_ci = 88, .L_nCcalls = 168, .ccalls_down = 1,
    .G_mainthread = 264 },
  { .release = "5.4.2", COMMON, .L_base_ci = 88, .L_nCcalls = 168, .G_mainthread = 264 },
  { .release = "5.4.3", COMMON, .L_base_ci = 96, .L_nCcalls = 176, .G_mainthread = 264 },
  { .release = "5.4.4", COMMON, .L_base_ci = 96, .L_nCcalls = 176, .G_mainthread = 264 },
  { .release = "5.4.5", COMMON, .L_base_ci = 96, .L_nCcalls = 176, .G_mainthread = 264 },
  { .release = "5.4.6", COMMON, .L_base_ci = 96, .L_nCcalls = 176, .G_mainthread = 264 },
  { .release = "5.4.7", COMMON, .L_base_ci = 96, .L_nCcalls = 176, .G_mainthread = 264 },
  { .release = "5.4.8", COMMON, .L_base_ci = 96, .L_nCcalls = 176, .G_mainthread = 264 },
};

const pl_lua_layout *pl_lua_layout_find(const char *release) {
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
    if (strcmp(layouts[i].release, release) == 0) return &layouts[i];
  return NULL;
}
