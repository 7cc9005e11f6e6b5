/*
** fuzz_decode.c: libFuzzer target for the record decoder and the ring walk.
**
** The input describes 1-4 random layouts, a ring of 2^8..2^16 bytes with
** random contents, and a random head and starting position. The target
** walks the ring forward as the reader does, demultiplexes each record,
** decodes it with its layout and with every other layout, reads every
** field and every byte the decoder points at (so the sanitizers check each
** pointer), then walks the ring backward as overwrite mode does.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "fuzz_input.h"
#include "ringbuf.h"

static uint64_t sink;


static void touch(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) sink += p[i];
}

static void touch_read(const pl_readv *rv) {
  sink += rv->time_enabled + rv->time_running + rv->value + rv->id + rv->lost;
  uint64_t nr = (rv->format & PL_F_GROUP) ? rv->nr : 1;
  for (uint64_t i = 0; i < nr; i++) {
    uint64_t v, id, lost;
    pl_readv_entry(rv, i, &v, &id, &lost);
    sink += v + id + lost;
  }
}

static void touch_record(const pl_record *r) {
  sink += r->type + r->misc + r->size + r->sid.pid + r->sid.time + r->sid.id;
  touch(r->p, r->size);
  if (!r->known) return;
  switch (r->type) {
  case PL_REC_SAMPLE: {
    const pl_sample *s = &r->u.sample;
    sink += s->ip + s->pid + s->time + s->period + s->weight + s->data_src;
    touch_read(&s->read);
    touch(s->callchain, s->callchain_nr * 8);
    touch(s->raw.p, s->raw.n);
    touch(s->branch.entries, s->branch.nr * 24);
    if (s->branch.counters) touch(s->branch.counters, s->branch.nr * 8);
    touch(s->regs_user.v, s->regs_user.n * 8);
    touch(s->regs_intr.v, s->regs_intr.n * 8);
    if (s->stack_user.data) touch(s->stack_user.data, s->stack_user.size);
    touch(s->aux.p, s->aux.n);
    break;
  }
  case PL_REC_MMAP:
  case PL_REC_MMAP2:
    touch(r->u.mmap.filename.p, r->u.mmap.filename.n);
    if (r->u.mmap.build_id) touch(r->u.mmap.build_id, 20);
    break;
  case PL_REC_COMM:
    touch(r->u.comm.comm.p, r->u.comm.comm.n);
    break;
  case PL_REC_READ:
    touch_read(&r->u.read.values);
    break;
  case PL_REC_NAMESPACES:
    touch(r->u.namespaces.links, r->u.namespaces.nr * 16);
    break;
  case PL_REC_KSYMBOL:
    touch(r->u.ksymbol.name.p, r->u.ksymbol.name.n);
    break;
  case PL_REC_BPF_EVENT:
    if (r->u.bpf_event.tag) touch(r->u.bpf_event.tag, 8);
    break;
  case PL_REC_CGROUP:
    touch(r->u.cgroup.path.p, r->u.cgroup.path.n);
    break;
  case PL_REC_TEXT_POKE:
    if (r->u.text_poke.bytes)
      touch(r->u.text_poke.bytes, (size_t)r->u.text_poke.old_len + r->u.text_poke.new_len);
    break;
  }
}

static void decode_all(const pl_layouts *set, const unsigned char *rec, size_t len) {
  pl_record r;
  const char *why;
  const pl_layout *lay = pl_layouts_find(set, rec, len, &why);
  uint64_t id, t;
  if (pl_record_id(set, rec, len, &id)) sink += id;
  if (pl_decode(rec, len, lay, &r, &why) == PL_DECODE_OK) touch_record(&r);
  else if (why) sink += strlen(why);
  for (size_t i = 0; i < set->n; i++) {
    if (pl_decode(rec, len, &set->v[i], &r, &why) == PL_DECODE_OK) touch_record(&r);
    if (pl_record_time(&set->v[i], rec, len, &t)) sink += t;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static unsigned char scratch[PL_RBUF_SCRATCH];
  pl_layout lay[4];
  size_t nlay = get_layouts(&data, &size, lay);
  pl_layouts set;
  const char *why;
  pl_layouts_init(&set, lay, nlay, &why);

  unsigned shift = 8 + (unsigned)(get(&data, &size, 1) % 9);
  uint64_t start = get(&data, &size, 8);
  uint64_t span = get(&data, &size, 3);
  uint64_t rsize = 1ULL << shift;
  unsigned char *area = calloc(1, rsize);
  if (!area) return 0;
  memcpy(area, data, size < rsize ? size : rsize);
  pl_rbuf rb = { area, rsize, scratch };

  uint64_t head = start + span % (rsize + 64);
  uint64_t pos = start;
  for (int guard = 0; guard < 4096; guard++) {
    const unsigned char *rec;
    size_t len;
    int rc = pl_rbuf_next(&rb, head, pos, &rec, &len);
    if (rc != PL_RBUF_RECORD) { sink += (uint64_t)rc + len; break; }
    decode_all(&set, rec, len);
    pos += len;
  }

  uint64_t extent = pl_rbuf_backward_extent(&rb, start);
  if (extent <= rsize) {
    unsigned char *copy = malloc(extent ? extent : 1);
    if (copy) {
      pl_rbuf_copy(&rb, start, copy, (size_t)extent);
      size_t off = 0;
      while (off + 8 <= extent) {
        size_t len = pl_u16at(copy + off + 6);
        if (len < 8 || len > extent - off) break;
        decode_all(&set, copy + off, len);
        off += len;
      }
      free(copy);
    }
  }
  free(area);
  return 0;
}
