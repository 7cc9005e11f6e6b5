# perf for Lua: build, test, demo, sanitizers, install.
#
# Variables use LuaRocks' names so `luarocks make` and a plain `make` agree.
# Flags the code needs live in PERF_CFLAGS, so `make CFLAGS=-O0` keeps them.

LUA        ?= lua5.4
LUA_INCDIR ?= /usr/include/lua5.4
LIBFLAG    ?= -shared
CC         ?= cc
CFLAGS     ?= -O2 -g
INST_LIBDIR ?= $(shell pkg-config --variable=INSTALL_CMOD lua5.4 2>/dev/null || echo /usr/local/lib/lua/5.4)
INST_LUADIR ?= $(shell pkg-config --variable=INSTALL_LMOD lua5.4 2>/dev/null || echo /usr/local/share/lua/5.4)

PERF_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden \
              -Wall -Wextra -pedantic -Wmissing-prototypes -Wshadow \
              -I$(LUA_INCDIR) -Icsrc
PERF_LIBS   = -ldl

SRCS := $(sort $(wildcard csrc/*.c))
OBJS := $(SRCS:csrc/%.c=build/%.o)
ASAN_OBJS := $(SRCS:csrc/%.c=build-asan/%.o)
HDRS := $(wildcard csrc/*.h)

# Debian packages a fresh machine needs for the build, the tests and the demo.
# libzstd1 (already there: dpkg depends on it) is loaded at run time for
# perf record -z files; the build needs no zstd headers (csrc/zstd.c).
# lua5.3, luajit, lighttpd (mod_magnet links liblua5.4.so.0): the targets
# spec/attach_spec.lua profiles or refuses by pid.
DEBIAN_PKGS = make gcc libc6-dev pkg-config lua5.4 liblua5.4-dev luarocks lua-busted linux-perf \
              lua-ldoc lua-discount tmux chromium lua-check lua-penlight golang-go libzstd1 \
              lua-socket prometheus prometheus-node-exporter curl \
              lua5.3 luajit lighttpd lighttpd-modules-lua libc6-dbg
BUSTED = busted --lua=$(LUA) -o spec/output.lua

.PHONY: all deps test demo docs asan lint install clean check-root

all: perf/core.so

build/%.o: csrc/%.c $(HDRS)
	@mkdir -p build
	$(CC) $(PERF_CFLAGS) $(CFLAGS) -c -o $@ $<

perf/core.so: $(OBJS)
	@mkdir -p perf
	$(CC) $(LIBFLAG) $(CFLAGS) -o $@ $(OBJS) $(PERF_LIBS)

# Installs whatever Debian packages are missing (apt-get update first).
deps:
	@missing=""; for p in $(DEBIAN_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	fi

test: deps
	$(MAKE) all
	spec/run $(BUSTED)

# A perf stat of a real command (its own output is dropped; the counts go
# to standard error, as perf stat prints them).
demo: deps
	$(MAKE) all
	$(LUA) bin/perf-lua stat -e task-clock,page-faults,context-switches,syscalls:sys_enter_openat -- ls -l / >/dev/null

# The HTML reference (LDoc, config.ld) in docs/: the modules' doc comments
# and the guides in topics/.
docs: deps
	rm -rf docs
	ldoc --fatalwarnings .

# The whole suite against the module built with ASan+UBSan, leaks checked
# at exit. The interpreter is not instrumented, so the sanitizer runtimes
# are preloaded; the module takes them out of LD_PRELOAD once loaded, so
# the programs it and the specs start run without them (see
# csrc/sanitizer_env.c).
ASAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
asan: deps
	$(MAKE) build-asan/perf/core.so
	ASAN_LIBS="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)"; \
	PERF_LUA_CPATH="build-asan/?.so" spec/run env LD_PRELOAD="$$ASAN_LIBS" \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(BUSTED)

build-asan/%.o: csrc/%.c $(HDRS)
	@mkdir -p build-asan
	$(CC) $(PERF_CFLAGS) -O1 -g $(ASAN_FLAGS) -c -o $@ $<

build-asan/perf/core.so: $(ASAN_OBJS)
	@mkdir -p build-asan/perf
	$(CC) $(LIBFLAG) -g $(ASAN_FLAGS) -o $@ $(ASAN_OBJS) $(PERF_LIBS)

# Static checks of every Lua file (.luacheckrc): globals, shadowing, unused
# values. bin/perf-lua has no .lua suffix, so it is named.
lint: deps
	luacheck --no-color lua spec examples bench fuzz bin/perf-lua

install: deps
	luarocks --lua-version 5.4 make rockspec/perf-event-scm-1.rockspec

clean:
	rm -rf build build-* perf bench/*_baseline.so

# ---- reading counters: benchmark (see bench/read.lua) ----
# `make bench` runs every benchmark: each one adds itself to its
# prerequisites. The C side of bench/read.lua is a small Lua module, so that
# both sides read the very same events in one process.
.PHONY: bench bench-read

# the C sides of the benchmarks, each a small Lua module
bench/%_baseline.so: bench/%_baseline.c
	$(CC) -std=c11 -D_GNU_SOURCE -fPIC -O2 -Wall -Wextra -pedantic \
	  -I$(LUA_INCDIR) $(LIBFLAG) -o $@ $<

bench-read: all bench/read_baseline.so
	$(LUA) bench/read.lua

bench: bench-read

# ---- counting a command: benchmark (root; see bench/stat.lua) ----
.PHONY: bench-stat
bench-stat: all bench/stat_baseline.so
	$(LUA) bench/stat.lua

bench: bench-stat

# ---- profiling a running process: benchmark (root; see bench/attach.lua) ----
.PHONY: bench-attach
bench-attach: all
	$(LUA) bench/attach.lua

bench: bench-attach

# ---- ring buffer: decoder fuzzing (libFuzzer, Debian's clang) ----
# `make fuzz` runs the decoder and ring-walk target for FUZZ_RUNS executions
# (10 million by default), then the perf.data and event-syntax targets;
# `make fuzz-push` runs the target that also pushes every decoded record
# into a Lua state; `make fuzz-short` is the short pass of all that CI runs.
FUZZ_PKGS  = clang libclang-rt-dev
FUZZ_CC   ?= clang
FUZZ_RUNS ?= 10000000
FUZZ_SRCS  = fuzz/fuzz_decode.c csrc/decode.c csrc/ringbuf.c
FUZZ_PUSH_SRCS = fuzz/fuzz_push.c csrc/decode.c csrc/record_push.c
FUZZ_FLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -Icsrc \
             -Wall -Wextra -pedantic -Wmissing-prototypes -Wshadow \
             -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

.PHONY: fuzz fuzz-push fuzz-perfdata fuzz-parse fuzz-short fuzz-deps

fuzz-deps:
	@$(MAKE) --no-print-directory deps DEBIAN_PKGS="$(FUZZ_PKGS)"

build/fuzz_decode: $(FUZZ_SRCS) csrc/decode.h csrc/read_format.h csrc/ringbuf.h fuzz/fuzz_input.h
	@mkdir -p build
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(FUZZ_SRCS)

fuzz: fuzz-deps
	$(MAKE) build/fuzz_decode
	@mkdir -p fuzz/corpus
	build/fuzz_decode -runs=$(FUZZ_RUNS) -print_final_stats=1 fuzz/corpus fuzz/seeds
	$(MAKE) fuzz-perfdata
	$(MAKE) fuzz-parse

# the perf.data reader: whole files (seeds written by perf record, with
# and without -z) opened through perf.core.perfdata_open, every record
# pushed. Each run builds Lua tables, so it runs fewer inputs than the
# decoder target. A compressed input may decompress to much more than its
# size: the fuzz build caps a file's decompressed records at 64 MiB, well
# inside libFuzzer's memory limit.
FUZZ_DATA_RUNS ?= 200000
build/fuzz_perfdata: fuzz/fuzz_perfdata.c $(SRCS) $(HDRS)
	@mkdir -p build
	$(FUZZ_CC) $(FUZZ_FLAGS) -I$(LUA_INCDIR) -DPL_DATA_MAX_INFLATED='((size_t)64 << 20)' \
	  -o $@ fuzz/fuzz_perfdata.c $(SRCS) -llua5.4 -ldl

fuzz-perfdata: fuzz-deps
	$(MAKE) build/fuzz_perfdata
	@mkdir -p fuzz/corpus-perfdata
	build/fuzz_perfdata -runs=$(FUZZ_DATA_RUNS) -max_len=65536 -print_final_stats=1 fuzz/corpus-perfdata fuzz/seeds-perfdata

build/fuzz_push: $(FUZZ_PUSH_SRCS) csrc/decode.h csrc/read_format.h csrc/record_push.h fuzz/fuzz_input.h
	@mkdir -p build
	$(FUZZ_CC) $(FUZZ_FLAGS) -I$(LUA_INCDIR) -o $@ $(FUZZ_PUSH_SRCS) -llua5.4

fuzz-push: fuzz-deps
	$(MAKE) build/fuzz_push
	@mkdir -p fuzz/corpus-push
	build/fuzz_push -runs=$(FUZZ_RUNS) -print_final_stats=1 fuzz/corpus-push fuzz/seeds

# the event syntax: strings parsed by perf.parse in a Lua state that loads
# the Lua front from lua/ and the C core from its linked sources. Seeds are
# the lines of fuzz/parse_seeds.txt, one file each; -timeout turns a hang
# into a failure. The Lua state keeps what the parser caches from one input
# to the next, which libFuzzer's per-input leak check would take for a leak
# at every input (and run at every input, some 100 times slower): it is
# off here; leaks in the C core are the sanitizer suite's to find.
# Error messages search for the nearest names, so a run is slow (some
# 200 to 600 inputs a second here).
FUZZ_PARSE_RUNS ?= 200000
build/fuzz_parse: fuzz/fuzz_parse.c $(SRCS) $(HDRS)
	@mkdir -p build
	$(FUZZ_CC) $(FUZZ_FLAGS) -I$(LUA_INCDIR) -DPERF_LUA_DIR='"$(CURDIR)/lua"' \
	  -o $@ fuzz/fuzz_parse.c $(SRCS) -llua5.4 -ldl

build/seeds-parse: fuzz/parse_seeds.txt
	rm -rf $@ && mkdir -p $@
	n=0; grep -v -e '^# ' -e '^$$' $< | while IFS= read -r line; do \
	  n=$$((n + 1)); printf '%s' "$$line" > $@/$$n; done

fuzz-parse: fuzz-deps
	$(MAKE) build/fuzz_parse build/seeds-parse
	@mkdir -p fuzz/corpus-parse
	build/fuzz_parse -runs=$(FUZZ_PARSE_RUNS) -timeout=10 -detect_leaks=0 -max_len=256 -dict=fuzz/parse.dict \
	  -artifact_prefix=fuzz/ -print_final_stats=1 fuzz/corpus-parse build/seeds-parse

fuzz-short:
	$(MAKE) fuzz FUZZ_RUNS=300000 FUZZ_DATA_RUNS=20000 FUZZ_PARSE_RUNS=10000
	$(MAKE) fuzz-push FUZZ_RUNS=100000

# ---- ring buffer: benchmark (root; see bench/ring.lua) ----
.PHONY: bench bench-ring
build/ring_decode: bench/ring_decode.c csrc/decode.c csrc/decode.h
	@mkdir -p build
	$(CC) $(PERF_CFLAGS) -O2 -o $@ bench/ring_decode.c csrc/decode.c

bench-ring: all build/ring_decode
	$(LUA) bench/ring.lua $(BENCH_N)

bench: bench-ring

# ---- profiling Lua code: benchmark (see bench/profile.lua) ----
.PHONY: bench-profile
bench-profile: all
	$(LUA) bench/profile.lua

bench: bench-profile

# ---- perf.data files: benchmark (see bench/perfdata.lua) ----
.PHONY: bench-perfdata
bench-perfdata: all
	$(LUA) bench/perfdata.lua

bench: bench-perfdata

# ---- recording every CPU at a high rate: benchmark (root; see bench/record.lua) ----
.PHONY: bench-record
bench-record: all
	$(LUA) bench/record.lua

bench: bench-record

# ---- a soak for slow leaks (see bench/soak.lua) ----
# Not part of `make bench`: it runs SOAK_MINUTES (10 by default).
SOAK_MINUTES ?= 10
.PHONY: bench-soak
bench-soak: all
	$(LUA) bench/soak.lua $(SOAK_MINUTES)

# ---- serving /metrics next to node_exporter's perf collector (root; see bench/serve.lua) ----
.PHONY: bench-serve
bench-serve: all
	$(LUA) bench/serve.lua

bench: bench-serve
