/*
** lua_locate_self.c: the locator (lua_locate.h) set up for the running
** process: the layout checked against the calling thread, coroutine
** resume functions taken from lcorolib itself, the code ranges of the Lua
** library and of this module, the calling OS thread's stack, and where a
** search looks from a signal's ucontext or from the calling function.
*/
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "lauxlib.h"
#include "lualib.h"
#include "lua_locate_self.h"

static uintptr_t fn_addr(lua_CFunction f) {
  uintptr_t a = 0;
  memcpy(&a, &f, sizeof f < sizeof a ? sizeof f : sizeof a);
  return a;
}

static int nothing(lua_State *L) {
  (void)L;
  return 0;
}

/* lcorolib's resume and the C function coroutine.wrap returns, from a
** fresh copy of the library where the process exports luaopen_coroutine
** (a program may have replaced coroutine.resume), else from the loaded one. */
static void coroutine_functions(lua_State *L, uintptr_t *resume, uintptr_t *wrapped) {
  lua_CFunction open;
  void *sym = dlsym(RTLD_DEFAULT, "luaopen_coroutine");
  memcpy(&open, &sym, sizeof open);
  if (sym) {
    lua_pushcfunction(L, open);
    lua_call(L, 0, 1);
  } else {
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, LUA_COLIBNAME);
    lua_remove(L, -2);
  }
  *resume = *wrapped = 0;
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, "resume");
    *resume = fn_addr(lua_tocfunction(L, -1));
    lua_getfield(L, -2, "wrap");
    lua_pushcfunction(L, nothing);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) *wrapped = fn_addr(lua_tocfunction(L, -1));
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
}

typedef struct quiet_find {
  pl_lua_locator *loc;
  uintptr_t want[2];            /* addresses inside the objects wanted */
} quiet_find;

/* dl_iterate_phdr: the executable segments of the objects holding want[] */
static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  quiet_find *q = (quiet_find *)data;
  int holds = 0;
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < info->dlpi_phnum; i++) {
      const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
      uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
      if (ph->p_type == PT_LOAD && q->want[k] >= lo && q->want[k] < lo + ph->p_memsz) holds = 1;
    }
  for (int i = 0; holds && i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || q->loc->nquiet >= PL_LUA_MAXQUIET) continue;
    q->loc->quiet_lo[q->loc->nquiet] = info->dlpi_addr + ph->p_vaddr;
    q->loc->quiet_hi[q->loc->nquiet] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    q->loc->nquiet++;
  }
  return 0;
}

static int thread_stack(uintptr_t *lo, uintptr_t *hi) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return -1;
  int r = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (r != 0) return -1;
  *lo = (uintptr_t)addr;
  *hi = (uintptr_t)addr + size;
  return 0;
}

const char *pl_lua_locator_self(lua_State *L, lua_CFunction running, pl_lua_locator *loc) {
  static char why[160];
  memset(loc, 0, sizeof *loc);
  int release = pl_lua_running_release();
  loc->lo = pl_lua_layout_for(release);
  if (!loc->lo) {
    snprintf(why, sizeof why, "no layout for Lua release %d", release);
    return why;
  }
  const char *bad = pl_lua_layout_check(loc->lo, L, fn_addr(running));
  if (bad) {
    snprintf(why, sizeof why, "the Lua %s layout does not match this Lua (%s)", loc->lo->name, bad);
    return why;
  }
  coroutine_functions(L, &loc->coresume, &loc->auxwrap);   /* may raise: first */
  loc->live = pl_lua_direct_mem;
  memcpy(&loc->G, (const char *)L + loc->lo->th_l_G, sizeof loc->G);
  memcpy(&loc->main, (const void *)(loc->G + loc->lo->g_mainthread), sizeof loc->main);
  quiet_find q = { loc, { fn_addr((lua_CFunction)lua_gettop), fn_addr(running) } };
  dl_iterate_phdr(add_object, &q);
  if (thread_stack(&loc->stack_lo, &loc->stack_hi) != 0) loc->stack_lo = loc->stack_hi = 0;
  if (pl_lua_self_mem_open(&loc->safe) != 0) {
    loc->lo = NULL;
    return "neither process_vm_readv nor /proc/self/mem reads this process";
  }
  return NULL;
}

void pl_lua_locator_self_close(pl_lua_locator *loc) {
  if (loc->safe.read) pl_lua_self_mem_close(&loc->safe);
  loc->lo = NULL;
}

void pl_lua_where_uc(const void *ucv, uintptr_t regs[PL_LUA_MAXREGS], pl_lua_where *w) {
  const ucontext_t *uc = (const ucontext_t *)ucv;
  w->regs = regs;
  w->nregs = 0;
  w->sp = 0;
  if (!uc) return;
#if defined(__x86_64__)
  static const int which[] = { REG_RBX, REG_RBP, REG_R12, REG_R13, REG_R14, REG_R15,
    REG_RDI, REG_RSI, REG_RDX, REG_RCX, REG_R8, REG_R9, REG_R10, REG_R11, REG_RAX };
  for (size_t i = 0; i < sizeof which / sizeof which[0] && i < PL_LUA_MAXREGS; i++)
    regs[w->nregs++] = (uintptr_t)uc->uc_mcontext.gregs[which[i]];
  w->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  for (int i = 0; i < 31 && i < PL_LUA_MAXREGS; i++) regs[w->nregs++] = (uintptr_t)uc->uc_mcontext.regs[i];
  w->sp = (uintptr_t)uc->uc_mcontext.sp;
#endif
}
