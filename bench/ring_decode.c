/*
** ring_decode.c: the plain C decoder over a captured record stream.
**
**   ring_decode FILE SAMPLE_TYPE
**
** FILE holds records exactly as the ring had them (rb:raw()); SAMPLE_TYPE
** is the events' sample_type as an integer. Decodes every record with
** pl_decode, sums the sample fields so nothing is optimised away, and
** prints "records seconds checksum" for bench/ring.lua.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FILE SAMPLE_TYPE\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 1; }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { perror("read"); return 1; }
  fclose(f);

  pl_layout lay;
  memset(&lay, 0, sizeof lay);
  lay.sample_type = strtoull(argv[2], NULL, 0);

  double t0 = now();
  size_t off = 0, records = 0;
  uint64_t sum = 0;
  while (off + 8 <= (size_t)n) {
    pl_record r;
    const char *why;
    int rc = pl_decode(buf + off, (size_t)n - off, &lay, &r, &why);
    if (rc != PL_DECODE_OK) { fprintf(stderr, "decode error at %zu\n", off); return 1; }
    if (r.type == PL_REC_SAMPLE) {
      const pl_sample *s = &r.u.sample;
      sum += s->ip + s->tid + s->time + s->cpu + s->period;
    }
    records++;
    off += r.size;
  }
  double t1 = now();
  printf("%zu %.6f %llu\n", records, t1 - t0, (unsigned long long)sum);
  free(buf);
  return 0;
}
