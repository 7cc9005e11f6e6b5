/*
** fuzz_input.h: how both fuzz targets read their input. It starts with
** 1-4 decoding layouts, then the ring parameters, then the records, so one
** corpus serves fuzz_decode.c and fuzz_push.c.
*/
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "decode.h"

/* The next k bytes of the input, little-endian (zeros past its end). */
static inline uint64_t get(const uint8_t **p, size_t *n, size_t k) {
  uint64_t v = 0;
  for (size_t i = 0; i < k && *n; i++, (*p)++, (*n)--)
    v |= (uint64_t)**p << (8 * i);
  return v;
}

/* Reads 1-4 layouts into lay[] and returns how many. */
static inline size_t get_layouts(const uint8_t **p, size_t *n, pl_layout lay[4]) {
  size_t nlay = 1 + get(p, n, 1) % 4;
  for (size_t i = 0; i < nlay; i++) {
    lay[i].sample_type = get(p, n, 4);
    lay[i].read_format = get(p, n, 1);
    lay[i].branch_sample_type = get(p, n, 4) << 16;
    lay[i].regs_user = get(p, n, 8);
    lay[i].regs_intr = get(p, n, 8);
    lay[i].id = get(p, n, 1);
    lay[i].sample_id_all = (int)get(p, n, 1) & 1;
  }
  return nlay;
}

#endif
