/*
** attach_parts.h: what the files that profile another process share.
**
**   attach_mem.c    reading the target's memory (process_vm_readv)
**   attach_lua.c    its running lua_State, and the stack key (attach_walk.h)
**   attach_frames.c the calls of a lua_State, read remotely
**   attach_proto.c  Protos: their lines and source names
**   attach_keys.c   samples counted by stack key
**   attach_trace.c  the tracer: ptrace, the sigtrap events, the stop loop
**   attach.c        core.attach_start: the tracer process and its results
**
** Everything here but attach.c is plain C without Lua: the tracer runs in
** a child process forked from the profiler, where no Lua is used.
*/
#ifndef PERF_ATTACH_PARTS_H
#define PERF_ATTACH_PARTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "perf_uapi.h"
#include "lua_layout.h"

#pragma GCC visibility push(hidden)

/* ---- the target's memory (attach_mem.c) ---- */
typedef struct pl_remote {
  pid_t pid;              /* any thread of the target: memory is shared */
  uint64_t reads;         /* process_vm_readv calls made */
} pl_remote;

/* Reads n bytes at addr of the target; 0, or -1 when any of them cannot
** be read (unmapped, or the target is gone). */
int pl_remote_read(pl_remote *r, uint64_t addr, void *buf, size_t n);
/* Reads as much as can be read of n bytes at addr; returns the count. */
size_t pl_remote_read_upto(pl_remote *r, uint64_t addr, void *buf, size_t n);

/* ---- samples by stack key (attach_keys.c) ---- */
typedef struct pl_keys {
  size_t cap, used;       /* slots (a power of 2) and keys kept */
  struct pl_key_slot *slots;
} pl_keys;

/* Adds n to the count of key (len bytes); 0, or -1 out of memory. */
int pl_keys_add(pl_keys *k, const char *key, size_t len, uint64_t n);
/* Calls fn for each key with its count; stops early when fn returns nonzero. */
int pl_keys_each(const pl_keys *k, int (*fn)(void *ud, const char *key, size_t len,
                 uint64_t count), void *ud);
void pl_keys_free(pl_keys *k);

/* ---- the Lua stack of a stopped thread (attach_lua.c) ---- */
#define PL_KEY_MAX 16384        /* bytes of one stack key */

typedef struct pl_luawalk pl_luawalk;

/* A walker for Lua layout `layout` (lua_layout.h); NULL out of memory. */
pl_luawalk *pl_luawalk_new(pl_remote *mem, const pl_lua_layout *layout);
void pl_luawalk_free(pl_luawalk *w);
/* Writes the key of the stack of the lua_State running in a thread stopped
** with registers regs[0..nregs) and stack pointer sp into key (PL_KEY_MAX
** bytes, the key format of profile.c, leaf first); returns its length, or
** 0 when no running lua_State was found there. */
size_t pl_luawalk_key(pl_luawalk *w, const uint64_t *regs, int nregs, uint64_t sp,
                      char *key);

/* ---- the tracer (attach_trace.c) ---- */
typedef struct pl_tracer_cfg {
  pid_t pid;                    /* the process */
  pid_t tid;                    /* one thread only, or 0: every thread */
  struct pl_attr attr;          /* the sampling event (sigtrap set here) */
  const pl_lua_layout *layout;
  int ctl_fd;                   /* readable (EOF or a byte): stop */
  int out_fd;                   /* where the result goes */
} pl_tracer_cfg;

/* Runs in the tracer process: seizes the threads, opens the events, writes
** "R\n" (or "E <errno> <message>\n" and returns) to out_fd, samples until
** told to stop or the target is gone, detaches, writes the result. Returns
** the process exit status for the tracer. */
int pl_tracer_run(const pl_tracer_cfg *cfg);

#pragma GCC visibility pop

#endif
