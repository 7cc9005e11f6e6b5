/*
** attach_trace.c: the tracer, run in a process of its own (attach.c forks
** it), so that the profiler's own end cannot end it in the middle of a
** stop.
**
** Every thread of the target is seized (PTRACE_SEIZE: no signal is sent
** to attach, and new threads are followed with PTRACE_O_TRACECLONE). On
** each one the sampling event is opened with sigtrap = 1 (and the
** remove_on_exec = 1 the kernel requires with it): each overflow sends that
** thread a SIGTRAP (si_code TRAP_PERF, si_perf_data = our cookie), queued
** before it next returns to user space, which is the state the event
** fired in (at a tracepoint's syscall, the syscall's return). The tracer
** sees it as a signal-delivery-stop, reads the Lua stack with
** process_vm_readv, and resumes the thread with signal 0: suppressed.
** Every other signal is delivered unchanged (resumed with it); a group
** stop is kept with PTRACE_LISTEN, as ptrace(2) says for PTRACE_SEIZE.
**
** Detaching leaves no SIGTRAP behind: the events are closed first (no new
** overflow), then each thread is stopped with PTRACE_INTERRUPT. A perf
** SIGTRAP still to come is queued by the kernel's task work, which
** get_signal runs before it takes the interrupt, so at that stop it is in
** the thread's pending set (/proc/.../status SigPnd): the thread is let run
** until it has taken it (suppressed), then interrupted again and detached.
** A SIGTRAP the target blocks cannot be taken and stays pending: see the
** docs. If the tracer itself were killed while a thread sat in a
** signal-delivery-stop for our SIGTRAP, the kernel's detach would deliver
** it and end the target; this process ignores SIGINT, SIGQUIT and SIGPIPE
** (a ^C is the profiler's to act on), takes SIGTERM and SIGHUP as an order
** to detach, and ends cleanly when the profiler closes the control pipe or
** dies.
*/
#include <errno.h>
#include <dirent.h>
#include <elf.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach_parts.h"

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif
#define PERF_IOC_DISABLE 0x2401
#define COOKIE 0x4c7561a77ac4ULL     /* si_perf_data of our events */
#define OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)

enum { T_RUNNING, T_DETACHING, T_GONE };

typedef struct thread {
  pid_t tid;
  int fd;                       /* the sampling event, -1 when closed */
  int state;
} thread;

typedef struct tracer {
  const pl_tracer_cfg *cfg;
  thread *t;
  int n, cap, live;
  pl_remote mem;
  pl_luawalk *walk;
  pl_keys keys;
  uint64_t samples, outside, signals, open_failed;
  uint64_t stop_ns, stop_max_ns;
  int execed, nomem;
  char key[PL_KEY_MAX];
} tracer;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void say(int fd, const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w; n -= (size_t)w;
  }
}

static void fail(const tracer *tr, int err, const char *what) {
  char buf[256];
  snprintf(buf, sizeof buf, "E %d %s\n", err, what);
  say(tr->cfg->out_fd, buf);
}

static thread *find(tracer *tr, pid_t tid) {
  for (int i = 0; i < tr->n; i++) if (tr->t[i].tid == tid) return &tr->t[i];
  return NULL;
}

/* Opens the sampling event on tid: a SIGTRAP to it at each overflow. */
static int open_event(tracer *tr, pid_t tid) {
  struct pl_attr a = tr->cfg->attr;
  a.flags |= (1ULL << PL_FLAG_SIGTRAP) | (1ULL << PL_FLAG_REMOVE_ON_EXEC);
  a.flags &= ~((1ULL << PL_FLAG_DISABLED) | (1ULL << PL_FLAG_INHERIT) |
               (1ULL << PL_FLAG_ENABLE_ON_EXEC));
  a.sig_data = COOKIE;
  if (a.size == 0) a.size = sizeof a;
  return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, 8UL /* FD_CLOEXEC */);
}

/* Adds a thread traced already (seized, or followed at a clone). */
static thread *add(tracer *tr, pid_t tid, int state) {
  thread *t = find(tr, tid);
  if (t) return t;
  if (tr->n == tr->cap) {
    int cap = tr->cap ? tr->cap * 2 : 16;
    thread *nt = realloc(tr->t, (size_t)cap * sizeof *nt);
    if (!nt) { tr->nomem = 1; return NULL; }
    tr->t = nt; tr->cap = cap;
  }
  t = &tr->t[tr->n++];
  t->tid = tid; t->fd = -1; t->state = state;
  tr->live++;
  if (state == T_RUNNING && !tr->execed) {
    t->fd = open_event(tr, tid);
    if (t->fd < 0) tr->open_failed++;
  }
  return t;
}

static void close_event(thread *t) {
  if (t->fd >= 0) { ioctl(t->fd, PERF_IOC_DISABLE, 0); close(t->fd); t->fd = -1; }
}

static void gone(tracer *tr, thread *t) {
  if (!t || t->state == T_GONE) return;
  close_event(t);
  t->state = T_GONE;
  tr->live--;
}

/* Seizes every thread of the process (until a pass finds no new one), or
** the one thread asked for. 0, or an errno with the thread's seize. */
static int seize_all(tracer *tr) {
  const pl_tracer_cfg *c = tr->cfg;
  if (c->tid) {
    if (ptrace(PTRACE_SEIZE, c->tid, 0, (void *)(long)PTRACE_O_TRACEEXEC) != 0) return errno;
    add(tr, c->tid, T_RUNNING);
    return tr->nomem ? ENOMEM : 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)c->pid);
  for (int fresh = 1; fresh;) {
    fresh = 0;
    DIR *d = opendir(path);
    if (!d) return errno == ENOENT ? ESRCH : errno;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      pid_t tid = (pid_t)atoi(e->d_name);
      if (tid <= 0 || find(tr, tid)) continue;
      if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)OPTIONS) != 0) {
        int err = errno;
        if (err == ESRCH) continue;            /* a thread that just ended */
        closedir(d);
        return err;
      }
      add(tr, tid, T_RUNNING);
      fresh = 1;
    }
    closedir(d);
    if (tr->nomem) return ENOMEM;
  }
  return tr->n > 0 ? 0 : ESRCH;
}

/* The registers of a stopped thread, as a list of words, and its sp. */
static int get_regs(pid_t tid, uint64_t *regs, int *nregs, uint64_t *sp) {
#if defined(__x86_64__)
  struct user_regs_struct r;
  struct iovec io = { &r, sizeof r };
  if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0) return -1;
  uint64_t v[] = { r.rbx, r.rbp, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rdx,
                   r.rcx, r.r8, r.r9, r.r10, r.r11, r.rax };
  *nregs = (int)(sizeof v / sizeof v[0]);
  memcpy(regs, v, sizeof v);
  *sp = r.rsp;
  return 0;
#elif defined(__aarch64__)
  struct user_regs_struct r;
  struct iovec io = { &r, sizeof r };
  if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0) return -1;
  for (int i = 0; i < 31; i++) regs[i] = r.regs[i];
  *nregs = 31;
  *sp = r.sp;
  return 0;
#else
  (void)tid; (void)regs; (void)nregs; (void)sp;
  return -1;
#endif
}

/* One overflow of thread tid: its Lua stack charged. */
static void sample(tracer *tr, pid_t tid) {
  uint64_t regs[32], sp;
  int nregs;
  tr->samples++;
  if (get_regs(tid, regs, &nregs, &sp) != 0) { tr->outside++; return; }
  size_t n = pl_luawalk_key(tr->walk, regs, nregs, sp, tr->key);
  if (n == 0) { tr->outside++; return; }
  if (pl_keys_add(&tr->keys, tr->key, n, 1) != 0) tr->nomem = 1;
}

/* Whether a signal-delivery-stop's signal is our SIGTRAP. */
static int ours(pid_t tid, int sig) {
  siginfo_t si;
  unsigned long data;
  if (sig != SIGTRAP || ptrace(PTRACE_GETSIGINFO, tid, 0, &si) != 0) return 0;
  if (si.si_code != TRAP_PERF) return 0;
  /* si_perf_data follows si_addr in the kernel's siginfo (signal.c) */
  memcpy(&data, (const char *)&si + offsetof(siginfo_t, si_addr) + sizeof(void *), sizeof data);
  return data == COOKIE;
}

static int is_stop_signal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Whether thread tid has a SIGTRAP pending that it does not block. */
static int sigtrap_pending(pid_t pid, pid_t tid) {
  char path[64], line[256];
  unsigned long long pnd = 0, blk = 0;
  snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, (int)tid);
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "SigPnd:", 7) == 0) pnd = strtoull(line + 7, NULL, 16);
    else if (strncmp(line, "SigBlk:", 7) == 0) blk = strtoull(line + 7, NULL, 16);
  }
  fclose(f);
  unsigned long long bit = 1ULL << (SIGTRAP - 1);
  return (pnd & bit) && !(blk & bit);
}

/* One wait status of a tracee while sampling (detaching: when stopping). */
static void on_status(tracer *tr, pid_t tid, int st, int detaching) {
  thread *t = find(tr, tid);
  if (WIFEXITED(st) || WIFSIGNALED(st)) { gone(tr, t); return; }
  if (!WIFSTOPPED(st)) return;
  if (!t) t = add(tr, tid, detaching ? T_DETACHING : T_RUNNING);   /* a new thread's first stop */
  int sig = WSTOPSIG(st), event = (st >> 16) & 0xff;
  if (event == PTRACE_EVENT_CLONE) {
    unsigned long child;
    if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0)
      add(tr, (pid_t)child, detaching ? T_DETACHING : T_RUNNING);
    ptrace(PTRACE_CONT, tid, 0, 0);
  } else if (event == PTRACE_EVENT_EXEC) {
    /* remove_on_exec took the events; the Lua state is gone with the image */
    tr->execed = 1;
    for (int i = 0; i < tr->n; i++) close_event(&tr->t[i]);
    ptrace(PTRACE_CONT, tid, 0, 0);
  } else if (event == PTRACE_EVENT_STOP) {
    if (detaching && t && t->state == T_DETACHING) {
      if (sigtrap_pending(tr->cfg->pid, tid)) {       /* take it first */
        ptrace(PTRACE_CONT, tid, 0, 0);
        ptrace(PTRACE_INTERRUPT, tid, 0, 0);
      } else if (ptrace(PTRACE_DETACH, tid, 0, 0) == 0 || errno == ESRCH) {
        gone(tr, t);
      }
    } else if (is_stop_signal(sig)) {
      ptrace(PTRACE_LISTEN, tid, 0, 0);               /* a group stop: kept */
    } else {
      ptrace(PTRACE_CONT, tid, 0, 0);                 /* a new thread's start */
    }
  } else if (event == 0 && ours(tid, sig)) {
    uint64_t t0 = now_ns();
    if (!detaching) sample(tr, tid);
    ptrace(PTRACE_CONT, tid, 0, 0);                   /* suppressed */
    uint64_t d = now_ns() - t0;
    if (!detaching) {
      tr->stop_ns += d;
      if (d > tr->stop_max_ns) tr->stop_max_ns = d;
    }
  } else if (event == 0) {
    tr->signals++;
    ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);   /* delivered unchanged */
  } else {
    ptrace(PTRACE_CONT, tid, 0, 0);
  }
}

/* Samples until the control pipe is readable (or closed), a SIGTERM or
** SIGHUP, or no thread is left. */
static void sample_loop(tracer *tr, int sigfd) {
  struct pollfd p[2] = { { tr->cfg->ctl_fd, POLLIN, 0 }, { sigfd, POLLIN, 0 } };
  while (tr->live > 0 && !tr->execed) {
    int rc = poll(p, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return;
    if (p[0].revents) return;
    if (p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      int stop = 0;
      while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo != SIGCHLD) stop = 1;
      int st;
      pid_t tid;
      while ((tid = waitpid(-1, &st, __WALL | WNOHANG)) > 0) on_status(tr, tid, st, 0);
      if (stop) return;
    }
  }
}

/* Closes the events, takes every SIGTRAP they still sent, detaches. */
static void detach_all(tracer *tr) {
  for (int i = 0; i < tr->n; i++) close_event(&tr->t[i]);
  for (int i = 0; i < tr->n; i++) {
    thread *t = &tr->t[i];
    if (t->state != T_RUNNING) continue;
    t->state = T_DETACHING;
    if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) != 0 && errno == ESRCH) gone(tr, t);
  }
  while (tr->live > 0) {
    int st;
    pid_t tid = waitpid(-1, &st, __WALL);
    if (tid < 0 && errno == EINTR) continue;
    if (tid < 0) break;                               /* ECHILD: none is left */
    on_status(tr, tid, st, 1);
  }
}

static int write_key(void *ud, const char *key, size_t len, uint64_t count) {
  int fd = *(int *)ud;
  char head[64];
  snprintf(head, sizeof head, "K %llu %zu\n", (unsigned long long)count, len);
  say(fd, head);
  char *copy = malloc(len + 1);
  if (!copy) return 1;
  memcpy(copy, key, len);
  copy[len] = '\0';
  say(fd, copy);
  free(copy);
  return 0;
}

static void write_result(tracer *tr) {
  char buf[256];
  int fd = tr->cfg->out_fd;
  snprintf(buf, sizeof buf, "S %llu %llu %llu %d %llu %llu %d %d %llu %llu\n",
           (unsigned long long)tr->samples, (unsigned long long)tr->outside,
           (unsigned long long)tr->signals, tr->n, (unsigned long long)tr->stop_ns,
           (unsigned long long)tr->stop_max_ns, tr->execed, tr->nomem,
           (unsigned long long)tr->open_failed, (unsigned long long)tr->mem.reads);
  say(fd, buf);
  pl_keys_each(&tr->keys, write_key, &fd);
}

/* The signals of a tracer: SIGCHLD (tracee stops) and the ones that stop
** it come through a signalfd; ^C is the profiler's to act on. */
static int tracer_signals(void) {
  sigset_t set;
  struct sigaction dfl, ign;
  memset(&dfl, 0, sizeof dfl);
  memset(&ign, 0, sizeof ign);
  dfl.sa_handler = SIG_DFL;
  ign.sa_handler = SIG_IGN;
  sigaction(SIGCHLD, &dfl, NULL);                     /* no SA_NOCLDSTOP */
  sigaction(SIGINT, &ign, NULL);
  sigaction(SIGQUIT, &ign, NULL);
  sigaction(SIGPIPE, &ign, NULL);
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, NULL);
  return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int pl_tracer_run(const pl_tracer_cfg *cfg) {
  tracer *tr = calloc(1, sizeof *tr);
  if (!tr) { say(cfg->out_fd, "E 12 out of memory\n"); return 1; }
  tr->cfg = cfg;
  tr->mem.pid = cfg->tid ? cfg->tid : cfg->pid;
  /* the target waits for this process at each sample: where it may, it
  ** runs ahead of ordinary work (a failure leaves the priority as it was) */
  if (setpriority(PRIO_PROCESS, 0, -10) != 0) errno = 0;
  int sigfd = tracer_signals();
  if (sigfd < 0) { fail(tr, errno, "signalfd"); return 1; }
  tr->walk = pl_luawalk_new(&tr->mem, cfg->layout);
  if (!tr->walk) { fail(tr, ENOMEM, "out of memory"); return 1; }
  int err = seize_all(tr);
  if (err == 0 && tr->open_failed > 0) {
    /* the first refusal's errno, from a fresh try on the first thread */
    int fd = open_event(tr, tr->t[0].tid);
    err = fd < 0 ? errno : 0;
    if (fd >= 0) close(fd);
    if (err) { detach_all(tr); fail(tr, err, "perf_event_open"); return 1; }
  } else if (err) {
    detach_all(tr);
    fail(tr, err, "ptrace");
    return 1;
  }
  say(cfg->out_fd, "R\n");
  sample_loop(tr, sigfd);
  detach_all(tr);
  write_result(tr);
  return 0;
}
