/*
** fuzz_push.c: libFuzzer target for the Lua side of records.
**
** The input is laid out as for fuzz_decode.c (so the seeds serve both):
** 1-4 layouts, the ring parameters (ignored here), then a stream of
** records. Each record the stream frames is demultiplexed, decoded and
** pushed into a Lua state twice: as a fresh table and into one reused
** table, so the sanitizers see every byte the pushers read and the key
** clearing of the reused table runs on random sequences of record types.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "decode.h"
#include "fuzz_input.h"
#include "record_push.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static lua_State *L;
  if (!L) {
    L = luaL_newstate();
    pl_record_push_init(L);
  }
  pl_layout lay[4];
  size_t nlay = get_layouts(&data, &size, lay);
  pl_layouts set;
  const char *why;
  pl_layouts_init(&set, lay, nlay, &why);

  get(&data, &size, 1);                 /* ring shift, start, span */
  get(&data, &size, 8);
  get(&data, &size, 3);
  /* the records, copied so the span ends exactly where the input does */
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  pl_keyset keys = { { 0, 0 } };
  lua_settop(L, 0);
  lua_newtable(L);                      /* the reused table, at 1 */
  size_t off = 0;
  for (int guard = 0; guard < 1024 && off < size; guard++) {
    const unsigned char *p = buf + off;
    size_t len = size - off;
    const char *lwhy = NULL, *dwhy = NULL;
    const pl_layout *l = len >= 8 ? pl_layouts_find(&set, p, len, &lwhy) : NULL;
    pl_record r;
    int status = pl_decode(p, len, l, &r, &dwhy);
    pl_record_push(L, &r, status, dwhy ? dwhy : lwhy, 0, NULL);
    lua_pop(L, 1);
    lua_pushvalue(L, 1);
    pl_record_push(L, &r, status, dwhy ? dwhy : lwhy, 2, &keys);
    lua_settop(L, 1);
    if (status == PL_DECODE_SHORT || status == PL_DECODE_SIZE) break;
    off += r.size;
  }
  lua_settop(L, 0);
  lua_gc(L, LUA_GCCOLLECT);
  free(buf);
  return 0;
}
