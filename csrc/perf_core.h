/*
** perf_core.h: what the files of perf.core share.
**
** Handles are full userdata created closed (fd = -1) and only then given
** their metatable and their resource, as liolib does. Lua values a handle
** depends on live in its user values, never as bare pointers:
**   perf.event  uv1 = name (string), uv2 = leader it joined (keeps it alive),
**               uv3 = free for the modules that extend events.
*/
#ifndef PERF_CORE_H
#define PERF_CORE_H

#include <stdint.h>
#include <sys/types.h>

#include "lua.h"
#include "lauxlib.h"

#include "perf_uapi.h"

#if LUA_VERSION_NUM < 504
#error "perf.core needs Lua 5.4 or newer"
#endif
#if LUA_MAXINTEGER < 9223372036854775807LL
#error "perf.core needs 64-bit Lua integers"
#endif

/* Only luaopen_perf_core is exported. */
#define PL_API __attribute__((visibility("default")))
#pragma GCC visibility push(hidden)

#define PL_EVENT_MT "perf.event"

typedef struct pl_event {
  int fd;                 /* -1 once closed */
  int enabled;            /* state last set through this handle */
  pid_t pid;              /* target as opened */
  int cpu;
  pid_t owner;            /* process that opened it */
  uint64_t id;            /* PERF_EVENT_IOC_ID, 0 if unknown */
  struct pl_attr attr;    /* as opened */
} pl_event;

/* ---- names: bit-sets and enums accepted by name (attr.c) ---- */
typedef struct pl_name {
  const char *name;
  uint64_t value;
} pl_name;

extern const pl_name pl_sample_type_names[];
extern const pl_name pl_read_format_names[];
extern const pl_name pl_branch_names[];
extern const pl_name pl_type_names[];
extern const pl_name pl_clockid_names[];
extern const pl_name pl_bp_type_names[];

/* A bit-set from a list of names, one name, or an integer; raises on misuse. */
uint64_t pl_checkbits(lua_State *L, int idx, const pl_name *names,
                      const char *what);
/* An enum from a name or an integer; raises on misuse. */
uint64_t pl_checkenum(lua_State *L, int idx, const pl_name *names,
                      const char *what);

/* ---- "did you mean" and unknown keys (nearest.c) ---- */
/* The candidate nearest to `s`, or "" when none is close. */
const char *pl_nearest(const char *s, const char *const *cands, size_t n);
/* Pushes and returns " (did you mean 'a'?)" or " (did you mean 'a', 'b' or
** 'c'?)" for the candidates nearest to `s`, or "" when none is close: the
** one spelling of a suggestion, in C messages and Lua's alike. */
const char *pl_did_you_mean(lua_State *L, const char *s, const char *const *cands,
                            size_t n);
/* Raises "<what> 'key' (did you mean ...?)". */
int pl_unknown_key(lua_State *L, const char *what, const char *key,
                   const char *const *cands, size_t n);
/* Raises as pl_unknown_key for the first key of the table at idx that is not
** in `keys` (and for a key that is not a string). */
void pl_check_keys(lua_State *L, int idx, const char *const *keys, size_t n,
                   const char *what);

/* ---- attr conversion (attr.c) ---- */
/* Fills *a from the table at idx (all of it zeroed first). Raises on misuse. */
void pl_attr_from_table(lua_State *L, int idx, struct pl_attr *a);
/* Applies the fields of the table at idx on top of *a (modify_attributes). */
void pl_attr_update(lua_State *L, int idx, struct pl_attr *a);
/* Pushes *a as a table of the fields that are set. */
void pl_attr_push(lua_State *L, const struct pl_attr *a);

/* ---- a tracepoint's format, for messages (tracefs.c) ---- */
/* Pushes why the kernel refused filter `text` on tracepoint `id`: the
** names it compares that the format lacks, or the filter syntax; returns 0
** (pushing nothing) when tracefs is not mounted or the id is unknown. */
int pl_explain_filter(lua_State *L, long long id, const char *text);
/* The id of tracepoint "system:event" in the mounted tracefs; 0 if none. */
int pl_tracepoint_id(const char *name, uint64_t *id);

/* ---- the generic events' names (event_names.c) ---- */
/* Pushes a copy of the attr fields at idx with `type` and `config` given
** by name turned into numbers (config against `type`, or else against
** `current_type`); raises on an unknown name. */
void pl_resolve_names(lua_State *L, int idx, uint64_t current_type);
/* Pushes the name perf prints for *a where the core knows it: "task-clock",
** "mem:0x1000/8:w", "r1a2"; otherwise "software/config=0x63/". */
void pl_push_event_name(lua_State *L, const struct pl_attr *a);

/* ---- handle types' metatables (handle.c) ---- */
/* Pushes the metatable `name` (luaL_newmetatable: __name), filled when it
** is new: the metamethods `meta`, and a table of `methods` (NULL for none)
** as __index, or, when `meta` has an __index function of its own, as the
** field `methods` for that function to look in. */
void pl_new_metatable(lua_State *L, const char *name, const luaL_Reg *meta,
                      const luaL_Reg *methods);
/* Adds methods to the __index table of a handle's metatable, e.g.
** PL_EVENT_MT (for the files that extend a handle). */
void pl_add_methods(lua_State *L, const char *metatable, const luaL_Reg *methods);

/* ---- printing plain tables (show.c) ---- */
/* Pushes the metatable `name` that prints a plain table readably. */
void pl_show_metatable(lua_State *L, const char *name);
/* Gives the table at idx that metatable. */
void pl_show(lua_State *L, int idx, const char *name);
void pl_open_show(lua_State *L);

/* ---- errors (errors.c) ---- */
const char *pl_errno_name(int err);
/* Pushes nil, "<what>: <strerror> (<ENAME>)[; <hint>]", err; returns 3.
** Call with the errno saved before any Lua API call. */
int pl_fail(lua_State *L, int err, const char *what, const char *hint);
/* The hint for a command that could not run: errno, its name, and the file
** found that exists though execve said ENOENT ("" if none; exec_hint.c). */
const char *pl_exec_hint(lua_State *L, int err, const char *file, const char *found);
/* A hint for a failed perf_event_open, written into buf. */
const char *pl_open_hint(int err, const struct pl_attr *a, pid_t pid, int cpu,
                         int group_fd, char *buf, size_t len);

/* ---- events (event.c) ---- */
/* As lauxlib's accessors: test returns NULL, check raises. */
pl_event *pl_check_event(lua_State *L, int idx);   /* open event or raise */
pl_event *pl_test_event(lua_State *L, int idx);    /* perf.event or NULL */
/* Opens *attr and pushes a new perf.event, or pushes nil, msg, errno.
** `leader` is the stack index of a perf.event to join (0 for none); `name`
** names the event in messages. Returns the number of values pushed. */
int pl_event_new(lua_State *L, const struct pl_attr *attr, pid_t pid, int cpu,
                 int leader, unsigned long flags, const char *name);
/* Reads the event's counter: value, enabled, running and lost as
** read_format gives them (absent ones are 0). For a group-read event the
** entry whose id matches this event is used. Returns 0 or an errno. */
int pl_event_read(const pl_event *ev, uint64_t *value, uint64_t *enabled,
                  uint64_t *running, uint64_t *lost);

/* Pushes the event's extension table, event uv3, made on first use: the
** files that extend events keep their per-event Lua values there, each
** under its own key ("ring", "userpage", "sigslot"). */
void pl_event_ext(lua_State *L, int evidx);

/* What perf.open does for an event opened with PERF_FLAG_FD_OUTPUT into
** a leader's ring: fn(L, event index, leader index) returns 0 or the
** number of values it pushed (nil, msg, errno). The ring file, which
** owns the rings, sets it when it registers (none: the ioctl alone). */
typedef int (*pl_output_fn)(lua_State *L, int evidx, int leaderidx);
void pl_event_on_output(pl_output_fn fn);

/* ---- the process (process.c) ---- */
/* The process id as of now (core.c keeps it current across fork). */
pid_t pl_self(void);
void pl_self_refresh(void);

/* ---- overflow signals (signal.c) ---- */
/* 1 if an overflow signal with POLL_HUP arrived for fd. */
int pl_signal_exhausted(int fd);
/* Has the signal handler call fn (async-signal-safe; NULL: none) after
** counting each overflow signal of the event at evidx, with the signal's
** ucontext_t. Returns 0 when the event has no signal slot (ev:notify()
** was not called). */
typedef void (*pl_overflow_fn)(const void *uc);
int pl_signal_set_callback(lua_State *L, int evidx, pl_overflow_fn fn);
/* For a tracepoint on syscall entry sampled by period: the handler keeps
** a call it interrupted from being sampled again when the kernel restarts
** it (signal.c). PL_RESTART_IOCTL: the event also fires on ioctl's entry
** (raw_syscalls:sys_enter, syscalls:sys_enter_ioctl). Also undoes what a
** restart changed; PL_RESTART_NONE turns it off. Returns 0 without a slot. */
enum { PL_RESTART_NONE, PL_RESTART_ENTRY, PL_RESTART_IOCTL };
int pl_signal_set_restarts(lua_State *L, int evidx, int mode);

/* ---- the module's parts, each adding to the table on top; core.c alone
** calls them ---- */
void pl_open_attr(lua_State *L);
void pl_open_event(lua_State *L);
void pl_open_util(lua_State *L);
int pl_push_for(lua_State *L, lua_CFunction step);
void pl_open_mount(lua_State *L);
void pl_open_errors(lua_State *L);     /* perf.core.errno */
void pl_open_tracefs(lua_State *L);    /* perf.core.check_filter */
void pl_open_nearest(lua_State *L);    /* perf.core.nearest, did_you_mean, check_keys */
void pl_open_event_names(lua_State *L); /* perf.core.types, hardware_events, ... */
void pl_open_consts(lua_State *L);
void pl_open_group(lua_State *L);
void pl_open_spawn(lua_State *L);
void pl_open_ring(lua_State *L);        /* ev:mmap, perf.ring, perf.core.poll */
void pl_open_ring_iter(lua_State *L);   /* the record iterators */
void pl_open_ring_write(lua_State *L);  /* perf.core.ring_write: a ring into a file */
void pl_open_decode(lua_State *L);      /* perf.core.decode/stream */
void pl_open_signal(lua_State *L);      /* ev:notify/overflows */
void pl_open_userpage(lua_State *L);    /* ev:userpage/userread */
void pl_open_profile(lua_State *L);     /* perf.profile's sampling hook */
void pl_open_profile_alloc(lua_State *L); /* mode = "alloc": the allocator wrapped */
void pl_open_profile_time(lua_State *L);  /* mode = "off-cpu" and "wall": time weights */
void pl_open_profile_timer(lua_State *L); /* event = "timer": a CPU-time POSIX timer */
void pl_open_profile_counters(lua_State *L); /* counters = {...}: deltas per sample */
void pl_open_perfdata(lua_State *L);    /* perf.core.perfdata_open (perf.data files) */
void pl_open_zstd(lua_State *L);        /* perf.core.zstd_version */
void pl_open_waiter(lua_State *L);      /* perf.core.waiter: a command, its rings and ^C */
void pl_open_stop_signals(lua_State *L); /* perf.core.stop_signals: ^C as a descriptor */
void pl_open_attach(lua_State *L);      /* perf.core.attach_start: another process profiled */

#pragma GCC visibility pop

#endif
