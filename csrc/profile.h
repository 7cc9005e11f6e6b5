/*
** profile.h: what profile.c offers the files that extend the profiler
** (other sources of samples, weights other than 1 per sample).
*/
#ifndef PL_PROFILE_H
#define PL_PROFILE_H

#include "perf_core.h"

/* One more sample is pending, from a signal handler given the signal's
** ucontext: arms the hook on the Lua thread that was running. Async-
** signal-safe; does nothing while no profiler runs. */
void pl_profile_overflow(const void *uc);
/* n more samples are pending, taken by the calling function (an allocator). */
void pl_profile_add(unsigned long n);
/* n more samples are pending, from a signal handler (the ucontext). */
void pl_profile_add_uc(unsigned long n, const void *uc);

/* The weight the hook charges for n samples taken at once, in the
** profile's unit (nanoseconds, bytes). NULL: each sample weighs 1. */
typedef lua_Integer (*pl_profile_weigh_fn)(unsigned long n);
void pl_profile_set_weigh(pl_profile_weigh_fn fn);

/* Called by the hook with the stack index of each key it charges (a
** string naming the stack), to charge more with it. NULL: nothing. */
typedef void (*pl_profile_charge_fn)(lua_State *L, int key);
void pl_profile_set_on_charge(pl_profile_charge_fn fn);

/* The group values (PERF_SAMPLE_READ, leader first) of the sample record
** the hook charges now, for a charge function: their count, 0 when the
** sample brought none (no ring, no PERF_SAMPLE_READ, or its record was
** lost). Valid during the charge only. */
int pl_profile_sample_read(const uint64_t **values, const uint64_t **ids);

/* 1 while the hook charges (what it allocates is the profiler's own). */
int pl_profile_charging(void);
/* The same as a flag to read where a call costs too much (an allocator). */
const int *pl_profile_charging_flag(void);

#endif
