/*
** lua_layout.c: the Lua 5.4.x layouts (lua_layout.h says where the
** numbers come from), picking one for the running Lua, checking it, and
** reading memory without faulting.
*/
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lua.h"
#include "lua_layout.h"

/* name, first, last,
** lua_State: status l_G ci stack stack_last base_ci hook nCcalls basehookcount hookmask size
** CallInfo: func top previous next savedpc nresults callstatus size
** global_State: totalbytes GCdebt gcstate gckind gcrun gcemergency allgc mainthread gcstopem
** ccalls_down gcrun_is_stop stack_moves_early */
static const pl_lua_layout layouts[] = {
  { "5.4.0", 50400, 50400,
    10, 24, 32, 56, 48, 96, 160, 176, 184, 192, 200,
    0, 8, 16, 24, 32, 60, 62, 64,
    16, 24, 101, 102, 105, 106, 112, 256, 0,
    1, 0, 1 },
  { "5.4.1", 50401, 50401,
    10, 24, 32, 48, 40, 88, 152, 168, 180, 188, 192,
    0, 8, 16, 24, 32, 60, 62, 64,
    16, 24, 101, 102, 105, 106, 112, 264, 0,
    1, 0, 1 },
  { "5.4.2", 50402, 50402,
    10, 24, 32, 48, 40, 88, 152, 168, 176, 184, 192,
    0, 8, 16, 24, 32, 60, 62, 64,
    16, 24, 101, 102, 105, 106, 112, 264, 0,
    0, 0, 1 },
  { "5.4.3", 50403, 50403,
    10, 24, 32, 48, 40, 96, 160, 176, 184, 192, 200,
    0, 8, 16, 24, 32, 60, 62, 64,
    16, 24, 101, 102, 106, 107, 112, 264, 103,
    0, 0, 0 },
  { "5.4.4-5.4.8", 50404, 50408,
    10, 24, 32, 48, 40, 96, 160, 176, 184, 192, 200,
    0, 8, 16, 24, 32, 60, 62, 64,
    16, 24, 101, 102, 106, 107, 112, 264, 103,
    0, 1, 0 },
};

const pl_lua_layout *pl_lua_layout_for(int release) {
  if (sizeof(void *) != 8) return NULL;        /* the tables are for 64-bit builds */
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
    if (release >= layouts[i].first && release <= layouts[i].last) return &layouts[i];
  return NULL;
}

int pl_lua_release_of(const char *ident) {
  const char *p = ident ? strstr(ident, "Lua 5.") : NULL;
  if (!p) return 0;
  char *end;
  long major = 5, minor = strtol(p + 6, &end, 10), rel = 0;
  if (end == p + 6 || *end != '.') return 0;
  const char *r = end + 1;
  rel = strtol(r, &end, 10);
  if (end == r || minor < 0 || minor > 99 || rel < 0 || rel > 99) return 0;
  return (int)(major * 10000 + minor * 100 + rel);
}

int pl_lua_running_release(void) {
  const char *ident = (const char *)dlsym(RTLD_DEFAULT, "lua_ident");
  int r = pl_lua_release_of(ident);
  return r ? r : LUA_VERSION_RELEASE_NUM;
}

/* ---- reading memory ---- */

typedef struct self_ctx {
  pid_t pid;
  int memfd;                    /* /proc/self/mem, or -1: process_vm_readv works */
} self_ctx;

static self_ctx self;

static int self_read(void *ctx, uintptr_t addr, void *buf, size_t len) {
  self_ctx *c = (self_ctx *)ctx;
  if (c->memfd >= 0) {
    ssize_t n = pread(c->memfd, buf, len, (off_t)addr);
    return n == (ssize_t)len ? 0 : -1;
  }
  struct iovec local = { buf, len }, remote = { (void *)addr, len };
  return process_vm_readv(c->pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

int pl_lua_self_mem_open(pl_lua_mem *m) {
  self.pid = getpid();
  self.memfd = -1;
  uint64_t probe = 0x5a5a5a5a, got = 0;
  m->read = self_read;
  m->ctx = &self;
  if (self_read(&self, (uintptr_t)&probe, &got, sizeof got) == 0 && got == probe) return 0;
  int err = errno;              /* refused (a seccomp profile): the mem file */
  self.memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  if (self.memfd < 0) return err ? err : errno;
  if (self_read(&self, (uintptr_t)&probe, &got, sizeof got) == 0 && got == probe) return 0;
  err = errno ? errno : EIO;
  close(self.memfd);
  self.memfd = -1;
  return err;
}

void pl_lua_self_mem_close(pl_lua_mem *m) {
  if (m->ctx == &self && self.memfd >= 0) {
    close(self.memfd);
    self.memfd = -1;
  }
  m->read = NULL;
}

/* Byte by byte and not instrumented: the C stack searched holds the
** sanitizers' redzones (under make asan), which are readable memory. */
__attribute__((no_sanitize("address", "undefined")))
static int direct_read(void *ctx, uintptr_t addr, void *buf, size_t len) {
  (void)ctx;
  const volatile unsigned char *from = (const volatile unsigned char *)addr;
  unsigned char *to = (unsigned char *)buf;
  for (size_t i = 0; i < len; i++) to[i] = from[i];
  return 0;
}

const pl_lua_mem pl_lua_direct_mem = { direct_read, NULL };

/* ---- threads ---- */

/* A field of a struct read into a byte array (which need not be aligned). */
#define FIELD(buf, off, type) field_##type((buf) + (off))
static uintptr_t field_uintptr_t(const unsigned char *p) { uintptr_t v; memcpy(&v, p, sizeof v); return v; }
static uint32_t field_uint32_t(const unsigned char *p) { uint32_t v; memcpy(&v, p, sizeof v); return v; }
static uint16_t field_uint16_t(const unsigned char *p) { uint16_t v; memcpy(&v, p, sizeof v); return v; }

int pl_lua_read_thread(const pl_lua_layout *lo, const pl_lua_mem *m, uintptr_t addr,
                       pl_lua_thread *t) {
  unsigned char th[256], ci[128];
  if (lo->th_size > sizeof th || lo->ci_size > sizeof ci) return -1;
  if (pl_lua_read(m, addr, th, lo->th_size) != 0) return -1;
  t->addr = addr;
  t->tt = th[PL_LUA_GC_TT];
  t->status = th[lo->th_status];
  t->G = FIELD(th, lo->th_l_G, uintptr_t);
  t->ci = FIELD(th, lo->th_ci, uintptr_t);
  t->nCcalls = FIELD(th, lo->th_nCcalls, uint32_t);
  t->func = 0;
  t->callstatus = 0;
  if (t->ci == 0 || pl_lua_read(m, t->ci, ci, lo->ci_size) != 0) return -1;
  t->func = FIELD(ci, lo->ci_func, uintptr_t);
  t->callstatus = FIELD(ci, lo->ci_callstatus, uint16_t);
  return 0;
}

int pl_lua_thread_active(const pl_lua_layout *lo, const pl_lua_thread *t, uintptr_t G) {
  return t->tt == PL_LUA_TAG_THREAD && t->G == G && t->status == PL_LUA_OK &&
         t->ci != t->addr + lo->th_base_ci;
}

uint32_t pl_lua_ccalls(const pl_lua_layout *lo, const pl_lua_thread *t) {
  uint32_t c = t->nCcalls & 0xffff;
  return lo->ccalls_down ? 0xffff - c : c;
}

const char *pl_lua_layout_check(const pl_lua_layout *lo, struct lua_State *L, uintptr_t f) {
  pl_lua_thread t, main;
  uintptr_t addr = (uintptr_t)L, maddr = 0;
  if (pl_lua_read_thread(lo, &pl_lua_direct_mem, addr, &t) != 0) return "unreadable";
  if (t.tt != PL_LUA_TAG_THREAD) return "the thread's type tag";
  memcpy(&maddr, (const void *)(t.G + lo->g_mainthread), sizeof maddr);
  if (maddr == 0 || pl_lua_read_thread(lo, &pl_lua_direct_mem, maddr, &main) != 0)
    return "l_G->mainthread";
  if (main.tt != PL_LUA_TAG_THREAD || main.G != t.G) return "l_G->mainthread->l_G is not l_G";
  if (!pl_lua_thread_active(lo, &t, t.G)) return "the thread's status or CallInfo";
  if (!(t.callstatus & PL_LUA_CIST_C)) return "the running C function's CallInfo";
  uintptr_t stack, stack_last;
  memcpy(&stack, (const void *)(addr + lo->th_stack), sizeof stack);
  memcpy(&stack_last, (const void *)(addr + lo->th_stack_last), sizeof stack_last);
  if (!(stack <= t.func && t.func < stack_last)) return "the stack bounds";
  unsigned char tv[PL_LUA_TVALUE_SIZE];
  memcpy(tv, (const void *)t.func, sizeof tv);
  uintptr_t fn;
  memcpy(&fn, tv, sizeof fn);
  if (tv[PL_LUA_TVALUE_TT] != PL_LUA_TAG_LCF || fn != f)
    return "the running C function's value";
  return NULL;
}
