/*
** record_push.h: a decoded record as a Lua table.
**
** A record can be pushed as a fresh table, or written into a table the
** caller reuses from one record to the next (the fast path: no table is
** built per record). A reused table is cleared of exactly the keys the
** previous record set and this one does not: the pusher keeps the set of
** top-level keys it wrote in a pl_keyset. Nested values (callchain, read,
** sample_id, ...) are always fresh tables.
*/
#ifndef PERF_RECORD_PUSH_H
#define PERF_RECORD_PUSH_H

#include "lua.h"

#include "decode.h"

#pragma GCC visibility push(hidden)

typedef struct pl_keyset {
  uint64_t bits[2];
} pl_keyset;

/*
** Writes record r into the table at index `t` (a fresh table when t == 0,
** pushed on the stack; else the table at t, left where it is). `keys` is
** the reused table's key set (NULL for a fresh table). `status` and `why`
** are what pl_decode returned: a record that could not be decoded is
** written with its header fields, `raw` (the whole record) and `error`.
** A record with no layout is written the same way, with `why` saying why.
*/
void pl_record_push(lua_State *L, const pl_record *r, int status,
                    const char *why, int t, pl_keyset *keys);

/* Makes the key strings the pushers use (once, when the module opens). */
void pl_record_push_init(lua_State *L);

/* Pushes the Lua table for a struct read_format. */
void pl_readv_push(lua_State *L, const pl_readv *rv);

/*
** Sample fields by name, for the iterators that yield fields as plain
** values (rb:samples, file:samples): pl_sample_field_names (NULL-ended,
** pl_sample_field_count of them; ring.h's pl_sample_field_check finds one
** by name), pl_sample_field_in (the field is in samples of
** this sample_type: "id" is also read from "identifier") and the pusher
** of field f of a decoded sample.
*/
extern const char *const pl_sample_field_names[];
extern const int pl_sample_field_count;
int pl_sample_field_in(int f, uint64_t sample_type);
void pl_sample_field_push(lua_State *L, int f, const pl_record *r);

#pragma GCC visibility pop

/* The name of header misc m's cpumode ("kernel", "user", ...). */
const char *pl_cpumode_name(unsigned m);

/* ---- f:records([t]): samples filled from Lua (record_fill.c) ---- */

/* The most values a plain sample has (pl_fill_push). */
#define PL_FILL_MAX 11

/* Whether samples of sample_type have plain values only. */
int pl_fill_fits(uint64_t sample_type);

/* Pushes the values of sample r (its layout fits) in the filler's order;
** their count. */
int pl_fill_push(lua_State *L, const pl_record *r);

/* With step, t (or the records' metatable: fresh = 1) and the event
** names (or nil: named = 0) on top, replaces them by the filler for the n
** events of sample_types and returns 1; or leaves them and returns 0 when
** it cannot be made. A fresh filler takes the header misc before the
** values. */
int pl_fill_function(lua_State *L, const uint64_t *sample_types, int n, int named, int fresh);

#endif
