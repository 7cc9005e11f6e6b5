/*
** read_format.h: the layout of a counter read, decoded in one place
** (include/uapi/linux/perf_event.h, struct read_format), and the one
** scaling rule for multiplexed counts. Plain C over 64-bit words: no Lua,
** no kernel headers, so the record decoder (decode.c, fuzzed alone), the
** event and the group readers all share it.
**
**   alone:  value [time_enabled] [time_running] [id] [lost]
**   group:  nr [time_enabled] [time_running], then nr entries of
**           value [id] [lost]
*/
#ifndef PERF_READ_FORMAT_H
#define PERF_READ_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* read_format bits (PERF_FORMAT_*) */
#define PL_F_TOTAL_TIME_ENABLED (1ULL << 0)
#define PL_F_TOTAL_TIME_RUNNING (1ULL << 1)
#define PL_F_ID                 (1ULL << 2)
#define PL_F_GROUP              (1ULL << 3)
#define PL_F_LOST               (1ULL << 4)
#define PL_F_TIMES (PL_F_TOTAL_TIME_ENABLED | PL_F_TOTAL_TIME_RUNNING)

#define PL_RF_INLINE static inline __attribute__((always_inline))

/* What one read gives for one counter; absent fields are 0. */
typedef struct pl_counts {
  uint64_t value, enabled, running, id, lost;
} pl_counts;

/* Words of a read of one event alone. */
PL_RF_INLINE size_t pl_rf_single_words(uint64_t rf) {
  return 1 + !!(rf & PL_F_TOTAL_TIME_ENABLED) + !!(rf & PL_F_TOTAL_TIME_RUNNING) +
         !!(rf & PL_F_ID) + !!(rf & PL_F_LOST);
}

/* Words before the entries of a group read: nr and the times. */
PL_RF_INLINE size_t pl_rf_head_words(uint64_t rf) {
  return 1 + !!(rf & PL_F_TOTAL_TIME_ENABLED) + !!(rf & PL_F_TOTAL_TIME_RUNNING);
}

/* Words of one entry of a group read. */
PL_RF_INLINE size_t pl_rf_entry_words(uint64_t rf) {
  return 1 + !!(rf & PL_F_ID) + !!(rf & PL_F_LOST);
}

/* A read of one event alone (pl_rf_single_words(rf) words at w). */
PL_RF_INLINE void pl_rf_single(const uint64_t *w, uint64_t rf, pl_counts *c) {
  size_t k = 0;
  c->value = w[k++];
  c->enabled = (rf & PL_F_TOTAL_TIME_ENABLED) ? w[k++] : 0;
  c->running = (rf & PL_F_TOTAL_TIME_RUNNING) ? w[k++] : 0;
  c->id = (rf & PL_F_ID) ? w[k++] : 0;
  c->lost = (rf & PL_F_LOST) ? w[k] : 0;
}

/* The head of a group read (pl_rf_head_words(rf) words at w): nr is
** returned, the times go to *c. */
PL_RF_INLINE uint64_t pl_rf_head(const uint64_t *w, uint64_t rf, pl_counts *c) {
  size_t k = 1;
  c->enabled = (rf & PL_F_TOTAL_TIME_ENABLED) ? w[k++] : 0;
  c->running = (rf & PL_F_TOTAL_TIME_RUNNING) ? w[k] : 0;
  return w[0];
}

/* One entry of a group read (pl_rf_entry_words(rf) words at e): value,
** id and lost into *c, the times left as they are. */
PL_RF_INLINE void pl_rf_entry(const uint64_t *e, uint64_t rf, pl_counts *c) {
  size_t k = 1;
  c->value = e[0];
  c->id = (rf & PL_F_ID) ? e[k++] : 0;
  c->lost = (rf & PL_F_LOST) ? e[k] : 0;
}

/*
** The count a multiplexed event would have reached had it run all the time
** it was enabled, exact in 128 bits, as libperf's perf_counts_values__scale:
** 0 when it never ran; the count itself when it ran all the time (or the
** times say it ran longer, which only rounding in the kernel can give).
** *fraction (if not NULL) is the share of the time it ran, in [0, 1].
*/
__extension__ typedef unsigned __int128 pl_u128;

PL_RF_INLINE uint64_t pl_scale(uint64_t v, uint64_t en, uint64_t run,
                               double *fraction) {
  if (run == 0) {
    if (fraction) *fraction = 0.0;
    return 0;
  }
  if (run >= en) {
    if (fraction) *fraction = 1.0;
    return v;
  }
  if (fraction) *fraction = (double)run / (double)en;
  return (uint64_t)((pl_u128)v * en / run);
}

#endif
