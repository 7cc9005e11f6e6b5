/*
** signal.c: overflow signals, counted in C and read from Lua.
**
**   ev:notify([signo]) -> true     deliver a signal on every overflow
**   ev:overflows() -> n, exhausted  signals counted; POLL_HUP seen
**
** An ordinary event is armed with O_ASYNC, F_SETSIG (a realtime signal by
** default, so overflows queue instead of merging) and F_SETOWN_EX naming
** the calling thread. The kernel then sends one signal per overflow with
** si_fd = the event's fd and si_code POLL_IN, or POLL_HUP for the overflow
** that exhausts an ev:refresh(n) count. An event opened with sigtrap = true
** instead gets a synchronous SIGTRAP (si_code TRAP_PERF) carrying the
** attr's sig_data, which is how its slot is found.
**
** The handler runs no Lua: it finds the slot by fd (or sig_data) in a
** fixed table and bumps lock-free atomic counters. Slots belong to a small
** userdata kept in the event's extension table; its __gc frees the slot.
** Another file may ask for a C function to be called from the handler
** after each count (pl_signal_set_callback), with the signal's ucontext
** (the interrupted registers): it must be async-signal-safe.
**
** Restarts (pl_signal_set_restarts, for a tracepoint on syscall entry):
** the signal of an overflow at a syscall's entry is pending while that
** call runs, so a blocking call (read, wait4) is interrupted at once; the
** handler has SA_RESTART, so the kernel rewinds the saved instruction
** pointer onto the syscall instruction (with the syscall number back in
** its register, signal(7), arch/x86/kernel/signal.c) and the call is made
** again after the handler: its entry fires the tracepoint again, whose
** overflow interrupts it again, for as long as the call would have
** blocked. When the handler sees the call will be restarted, it makes the
** event's period one longer until its next overflow: the restart's entry
** is counted by the kernel but is no sample, and the restarted call blocks
** as it would have. (A software event whose sample_type has
** PERF_SAMPLE_PERIOD samples every hit whatever its period: the profiler
** leaves it out.) Calls
** that return EINTR to a handler (poll, nanosleep: ERESTARTNOHAND,
** ERESTART_RESTARTBLOCK) are not restarted and need nothing.
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "perf_core.h"

#define PL_SIGSLOTS 256
#define PL_SIGSLOT_MT "perf.sigslot"
#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

typedef struct sigslot {
  atomic_int state;             /* 0 free, 1 armed */
  atomic_int fd;                /* event fd (fasync events) */
  atomic_int trap;              /* 1: a sigtrap event, matched by sig_data */
  atomic_int signo;
  atomic_ulong sig_data;
  atomic_ulong count;           /* signals for this event */
  atomic_ulong hup;             /* of which POLL_HUP */
  atomic_ulong addr;            /* sigtrap: si_addr of the last one */
  _Atomic(pl_overflow_fn) callback; /* called after the count, or NULL */
  atomic_int restarts;          /* PL_RESTART_*: a syscall-entry tracepoint */
  atomic_ulong period;          /* its sample period as opened */
  atomic_int widened;           /* the period is one longer until the next overflow */
  atomic_int self;              /* overflows of our own ioctl, not counted */
} sigslot;

_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "signal counters must be lock-free");

static sigslot slots[PL_SIGSLOTS];
static atomic_ulong stray;      /* signals no slot claimed */
static struct sigaction old_trap;
static unsigned char installed[_NSIG];

/* si_perf_data: the kernel's siginfo has it right after si_addr in the
** _sigfault part (asm-generic/siginfo.h, _perf._data); glibc may not name
** it, so it is read by offset. */
static unsigned long perf_data(const siginfo_t *si) {
  unsigned long v;
  memcpy(&v, (const char *)si + offsetof(siginfo_t, si_addr) + sizeof(void *),
         sizeof v);
  return v;
}

static void call_back(sigslot *s, const void *uc) {
  pl_overflow_fn fn = atomic_load(&s->callback);
  if (fn) fn(uc);
}

/* Whether the interrupted context will make its syscall again: the saved
** instruction pointer is on the syscall instruction, with a syscall number
** (not restart_syscall, a different call) where the call takes it. */
static int will_restart(const void *ucp) {
  const ucontext_t *uc = ucp;
#if defined(__x86_64__)
  const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
  long long nr = uc->uc_mcontext.gregs[REG_RAX];
  return ip && ip[0] == 0x0f && ip[1] == 0x05 && nr >= 0 && nr < 1024 &&
         nr != SYS_restart_syscall;
#elif defined(__aarch64__)
  const uint32_t *pc = (const uint32_t *)uc->uc_mcontext.pc;
  unsigned long long nr = uc->uc_mcontext.regs[8];
  return pc && *pc == 0xd4000001u && nr < 1024 && nr != SYS_restart_syscall;
#else
  (void)uc;
  return 0;
#endif
}

/* Sets the event's period. Changing it zeroes the countdown, which a
** software event reloads only when it is next added to the CPU: disabled
** first (an event that fires on ioctl counts that entry, at the old
** period) and enabled after, the next overflow is `period` hits away. */
static void set_period(sigslot *s, unsigned long period, int reload) {
  uint64_t p = period;
  int fd = atomic_load(&s->fd);
  if (reload) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  ioctl(fd, PERF_EVENT_IOC_PERIOD, &p);
  if (reload) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

/* After counting an overflow of s: lengthens the period by one over a
** restart, gives it back at the next overflow. */
static void watch_restart(sigslot *s, const void *uc) {
  int mode = atomic_load(&s->restarts);
  unsigned long period = atomic_load(&s->period);
  if (!mode) return;
  if (will_restart(uc)) {
    /* an event that fires on ioctl's entry overflows at the disable's
    ** entry when its period is 1 */
    if (mode == PL_RESTART_IOCTL && period == 1 && !atomic_load(&s->widened))
      atomic_fetch_add(&s->self, 1);
    atomic_store(&s->widened, 1);
    set_period(s, period + 1, 1);
  } else if (atomic_exchange(&s->widened, 0)) {
    set_period(s, period, 1);
  }
}

static void on_signal(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  int matched = 0;
  if (sig == SIGTRAP && si->si_code == TRAP_PERF) {
    unsigned long data = perf_data(si);
    for (int i = 0; i < PL_SIGSLOTS && !matched; i++) {
      sigslot *s = &slots[i];
      if (atomic_load(&s->state) == 1 && atomic_load(&s->trap) &&
          atomic_load(&s->sig_data) == data) {
        atomic_fetch_add(&s->count, 1);
        atomic_store(&s->addr, (unsigned long)si->si_addr);
        call_back(s, uc);
        matched = 1;
      }
    }
  } else if (sig == SIGIO && si->si_code == SI_KERNEL) {
    /* the queue of realtime signals was full: the kernel sends SIGIO
    ** instead (fcntl(2), F_SETSIG), naming no fd. It is the overflow of
    ** the one event signalling that way, when only one does. */
    sigslot *only = NULL;
    int n = 0;
    for (int i = 0; i < PL_SIGSLOTS; i++) {
      sigslot *s = &slots[i];
      if (atomic_load(&s->state) == 1 && !atomic_load(&s->trap) &&
          atomic_load(&s->signo) >= SIGRTMIN) { only = s; n++; }
    }
    if (n == 1) {
      atomic_fetch_add(&only->count, 1);
      call_back(only, uc);
      matched = 1;
    }
  } else if (sig != SIGTRAP) {
    for (int i = 0; i < PL_SIGSLOTS && !matched; i++) {
      sigslot *s = &slots[i];
      if (atomic_load(&s->state) == 1 && !atomic_load(&s->trap) &&
          atomic_load(&s->fd) == si->si_fd && atomic_load(&s->signo) == sig) {
        matched = 1;
        int self = atomic_load(&s->self);
        if (self > 0 && atomic_compare_exchange_strong(&s->self, &self, self - 1))
          break;                /* our own ioctl's entry: no event of the program */
        atomic_fetch_add(&s->count, 1);
        if (si->si_code == POLL_HUP) atomic_fetch_add(&s->hup, 1);
        watch_restart(s, uc);
        call_back(s, uc);
      }
    }
  } else {
    /* a SIGTRAP that is not ours (a debugger, int3): hand it on */
    if (old_trap.sa_flags & SA_SIGINFO) {
      if (old_trap.sa_sigaction) old_trap.sa_sigaction(sig, si, uc);
    } else if (old_trap.sa_handler == SIG_DFL) {
      signal(SIGTRAP, SIG_DFL);
      raise(SIGTRAP);
    } else if (old_trap.sa_handler != SIG_IGN && old_trap.sa_handler) {
      old_trap.sa_handler(sig);
    }
    matched = 1;
  }
  if (!matched) atomic_fetch_add(&stray, 1);
  errno = saved;
}

static int install(int signo) {
  if (signo <= 0 || signo >= _NSIG) return EINVAL;
  if (installed[signo]) return 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(signo, &sa, signo == SIGTRAP ? &old_trap : NULL) < 0) return errno;
  installed[signo] = 1;
  return 0;
}

int pl_signal_exhausted(int fd) {
  for (int i = 0; i < PL_SIGSLOTS; i++) {
    sigslot *s = &slots[i];
    if (atomic_load(&s->state) == 1 && !atomic_load(&s->trap) &&
        atomic_load(&s->fd) == fd)
      return atomic_load(&s->hup) > 0;
  }
  return 0;
}

/* ---- the slot handle (event ext "sigslot") ---- */

typedef struct slot_ref {
  int index;                    /* -1 once released */
} slot_ref;

static int slot_gc(lua_State *L) {
  slot_ref *ref = luaL_checkudata(L, 1, PL_SIGSLOT_MT);
  if (ref->index >= 0) {
    atomic_store(&slots[ref->index].callback, NULL);
    atomic_store(&slots[ref->index].state, 0);
  }
  ref->index = -1;
  return 0;
}

/* The event's slot, or NULL. Leaves nothing on the stack. */
static sigslot *event_slot(lua_State *L, int evidx) {
  pl_event_ext(L, evidx);
  sigslot *s = NULL;
  if (lua_getfield(L, -1, "sigslot") == LUA_TUSERDATA) {
    slot_ref *ref = luaL_checkudata(L, -1, PL_SIGSLOT_MT);
    if (ref->index >= 0) s = &slots[ref->index];
  }
  lua_pop(L, 2);
  return s;
}

static pid_t thread_id(void) {
  return (pid_t)syscall(SYS_gettid);
}

/* ev:notify([signo]) */
static int ev_notify(lua_State *L) {
  pl_event *ev = pl_check_event(L, 1);
  int trap = (int)PL_HAS(&ev->attr, PL_FLAG_SIGTRAP);
  lua_Integer signo = luaL_optinteger(L, 2, trap ? SIGTRAP : SIGRTMIN + 1);
  if (trap && signo != SIGTRAP)
    return luaL_argerror(L, 2, "a sigtrap event always signals SIGTRAP");
  if (!trap && (signo < 1 || signo >= _NSIG || signo == SIGKILL ||
                signo == SIGSTOP || signo == SIGTRAP))
    return luaL_argerror(L, 2, "not a usable signal number");

  sigslot *s = event_slot(L, 1);
  if (!s) {
    int i;
    int fd = ev->fd;
    /* a slot still naming this fd belonged to an event since closed */
    for (i = 0; i < PL_SIGSLOTS; i++)
      if (atomic_load(&slots[i].state) == 1 && !atomic_load(&slots[i].trap) &&
          atomic_load(&slots[i].fd) == fd)
        atomic_store(&slots[i].fd, -1);
    for (i = 0; i < PL_SIGSLOTS; i++) {
      int expect = 0;
      if (atomic_compare_exchange_strong(&slots[i].state, &expect, 2)) break;
    }
    if (i == PL_SIGSLOTS)
      return luaL_error(L, "too many events with overflow signals (at most %d)",
                        PL_SIGSLOTS);
    s = &slots[i];
    atomic_store(&s->count, 0);
    atomic_store(&s->hup, 0);
    atomic_store(&s->addr, 0);
    atomic_store(&s->callback, NULL);
    atomic_store(&s->restarts, PL_RESTART_NONE);
    atomic_store(&s->widened, 0);
    atomic_store(&s->self, 0);
    slot_ref *ref = lua_newuserdatauv(L, sizeof *ref, 0);
    ref->index = i;
    luaL_setmetatable(L, PL_SIGSLOT_MT);
    pl_event_ext(L, 1);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "sigslot");
    lua_pop(L, 2);
  }
  atomic_store(&s->fd, ev->fd);
  atomic_store(&s->trap, trap);
  atomic_store(&s->signo, (int)signo);
  atomic_store(&s->sig_data, (unsigned long)ev->attr.sig_data);
  atomic_store(&s->state, 1);

  int err = install((int)signo);
  /* a realtime signal whose queue is full comes as SIGIO, which would end
  ** the process: taken too, unless the program handles SIGIO itself */
  if (!err && !trap && signo >= SIGRTMIN && !installed[SIGIO]) {
    struct sigaction cur;
    if (sigaction(SIGIO, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
        cur.sa_handler == SIG_DFL)
      err = install(SIGIO);
  }
  if (err) return pl_fail(L, err, "notify: sigaction", NULL);
  if (trap) { lua_pushboolean(L, 1); return 1; }

  struct f_owner_ex owner = { F_OWNER_TID, thread_id() };
  int fl = fcntl(ev->fd, F_GETFL);
  if (fl < 0 || fcntl(ev->fd, F_SETOWN_EX, &owner) < 0 ||
      fcntl(ev->fd, F_SETSIG, (int)signo) < 0 ||
      fcntl(ev->fd, F_SETFL, fl | O_ASYNC) < 0) {
    err = errno;
    return pl_fail(L, err, "notify: fcntl", NULL);
  }
  lua_pushboolean(L, 1);
  return 1;
}

int pl_signal_set_callback(lua_State *L, int evidx, pl_overflow_fn fn) {
  sigslot *s = event_slot(L, evidx);
  if (!s) return 0;
  atomic_store(&s->callback, fn);
  return 1;
}

int pl_signal_set_restarts(lua_State *L, int evidx, int mode) {
  sigslot *s = event_slot(L, evidx);
  pl_event *ev = pl_test_event(L, evidx);
  if (!s || !ev) return 0;
  if (PL_HAS(&ev->attr, PL_FLAG_FREQ)) mode = PL_RESTART_NONE;   /* no period to lengthen */
  atomic_store(&s->restarts, PL_RESTART_NONE);
  if (atomic_exchange(&s->widened, 0)) set_period(s, atomic_load(&s->period), 0);
  atomic_store(&s->self, 0);
  atomic_store(&s->period, (unsigned long)ev->attr.sample_period);
  atomic_store(&s->restarts, mode);
  return 1;
}

/* ev:overflows() -> signals counted, true if the refresh count ran out
** (POLL_HUP), and for a sigtrap event the si_addr of the last one */
static int ev_overflows(lua_State *L) {
  pl_check_event(L, 1);
  sigslot *s = event_slot(L, 1);
  if (!s) return luaL_error(L, "overflow signals are not on for this event: call ev:notify() first");
  lua_pushinteger(L, (lua_Integer)atomic_load(&s->count));
  lua_pushboolean(L, atomic_load(&s->hup) > 0);
  if (atomic_load(&s->trap)) {
    lua_pushinteger(L, (lua_Integer)atomic_load(&s->addr));
    return 3;
  }
  return 2;
}

/* core.signal_restarts(ev, mode): mode "entry" or "ioctl" (as
** pl_signal_set_restarts), nil for none; false when ev has no slot */
static int l_signal_restarts(lua_State *L) {
  pl_check_event(L, 1);
  static const char *const modes[] = { "none", "entry", "ioctl", NULL };
  int mode = lua_isnoneornil(L, 2) ? PL_RESTART_NONE : luaL_checkoption(L, 2, NULL, modes);
  lua_pushboolean(L, pl_signal_set_restarts(L, 1, mode));
  return 1;
}

static const luaL_Reg event_methods[] = {
  { "notify", ev_notify },
  { "overflows", ev_overflows },
  { NULL, NULL }
};

static const luaL_Reg slot_meta[] = {
  { "__gc", slot_gc },
  { NULL, NULL }
};

static const luaL_Reg functions[] = {
  { "signal_restarts", l_signal_restarts },
  { NULL, NULL }
};

void pl_open_signal(lua_State *L) {
  pl_new_metatable(L, PL_SIGSLOT_MT, slot_meta, NULL);
  lua_pop(L, 1);
  pl_add_methods(L, PL_EVENT_MT, event_methods);
  luaL_setfuncs(L, functions, 0);
  lua_pushinteger(L, SYS_rt_sigreturn);   /* the handler's return: a syscall */
  lua_setfield(L, -2, "SYS_rt_sigreturn");
}
