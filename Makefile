# swapadvisor - build the static library, the CLIs, the tests and the benchmarks.
#
#   make            library + every CLI into bin/
#   make test       test/cli/run.sh (CLI behaviours as data), then the Check suite (ends with
#                   Check's summary line), after `make layers`
#   make asan-test  the same suite under AddressSanitizer + UBSan (build-asan/)
#   make nocuda-check  the build without nvcc (build-nocuda/): its GPU paths exit 7
#                   with gpu_none.c's one message (scripts/nocuda.sh)
#   make valgrind   memcheck of every policy on graphs/*.json (scripts/valgrind.sh)
#   make fuzz       libFuzzer targets of test/fuzz/, FUZZ_SECONDS each (scripts/fuzz.sh)
#   make check      all of these (what CI runs)
#   make bench      benchmarks; figures land in bench/results/
#   make clean
#
# lib/ is one static library in layers, one folder each (docs/architecture.md):
#   core < model < zoo < planning < search < policies < emit < cuda < runner
# a layer calls only its own layer or lower ones; `make layers` checks it.
# CUDA sources (lib/cuda/*.cu) are built when nvcc is on PATH; otherwise
# lib/cuda/gpu_none.c stands in and the GPU paths report that the build has no CUDA.
# That choice of files is the one CUDA boundary: no source tests for CUDA with #if.

CC      ?= gcc
NVCC    ?= $(shell command -v nvcc 2>/dev/null)
BUILD   ?= build
BIN     ?= bin
OPT     ?= -O2
SAN     ?=

WARN = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wpointer-arith -Wwrite-strings -Wformat=2 -Wundef -Wvla -Wcast-align \
       -Wnull-dereference -Wdouble-promotion -Wno-format-truncation -Werror
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(OPT) -g -fopenmp $(WARN) $(SAN) -Iinclude -Ilib -MMD -MP $(CFLAGS)
LDLIBS_ALL = -lcjson -lm -fopenmp $(SAN) $(LDLIBS)

LAYERS   = core model zoo planning search policies emit cuda runner
LIB_SRC  = $(foreach l,$(LAYERS),$(wildcard lib/$(l)/*.c))
CU_SRC   = $(wildcard lib/cuda/*.cu)
CMD_SRC  = $(wildcard cmd/*.c)
CLI_SRC  = $(wildcard cmd/common/*.c)
TEST_SRC = $(wildcard test/test_*.c)
BENCH_SRC = $(wildcard bench/*.c)

ifneq ($(NVCC),)
  CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
  LIB_SRC := $(filter-out lib/cuda/gpu_none.c,$(LIB_SRC))
  CU_OBJ   = $(patsubst lib/%.cu,$(BUILD)/lib/%.cu.o,$(CU_SRC))
  CFLAGS_ALL += -I$(CUDA_HOME)/include
  CUDA_LIBDIRS = $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib
  LDLIBS_ALL += $(foreach d,$(CUDA_LIBDIRS),-L$(d) -Wl,-rpath,$(d)) -Wl,--as-needed -lcudnn -lcublas -lcudart -lstdc++ -Wl,--no-as-needed
  # CUDA 13 dropped Volta (sm_70): the V100 profile is analytic only.
  NVCCFLAGS ?= -O2 -std=c++17 -Iinclude -Ilib -Xcompiler -Wall,-fPIC \
     -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
else
  CU_SRC :=
  CU_OBJ :=
  $(info nvcc not found: building without CUDA (GPU paths will report it))
endif

LIB_OBJ  = $(patsubst lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRC)) $(CU_OBJ)
LIBA     = $(BUILD)/libswapadvisor.a
CLIA     = $(BUILD)/libsacli.a
CLI_OBJ  = $(patsubst cmd/common/%.c,$(BUILD)/cmd/common/%.o,$(CLI_SRC))
CMDS     = $(patsubst cmd/%.c,$(BIN)/%,$(CMD_SRC))
TEST_OBJ = $(patsubst test/%.c,$(BUILD)/test/%.o,$(TEST_SRC) test/check_main.c)
TEST_BIN = $(BUILD)/test/run_tests
BENCHES  = $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all test asan-test nocuda-check check bench clean layers valgrind fuzz
all: $(LIBA) $(CMDS)

$(BUILD)/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@
$(BUILD)/lib/%.cu.o: lib/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@
$(LIBA): $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/cmd/common/%.o: cmd/common/%.c | $(BUILD)/cmd/common
	$(CC) $(CFLAGS_ALL) -Icmd/common -c $< -o $@
$(CLIA): $(CLI_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/cmd/%.o: cmd/%.c | $(BUILD)/cmd
	$(CC) $(CFLAGS_ALL) -Icmd/common -c $< -o $@
$(BIN)/%: $(BUILD)/cmd/%.o $(CLIA) $(LIBA) | $(BIN)
	$(CC) -o $@ $< $(CLIA) $(LIBA) $(LDLIBS_ALL)

# One runner for every suite: test_suites.h is generated from the
# "Suite *suite_NAME(void)" definitions found in test/test_*.c.
$(BUILD)/test/test_suites.h: $(TEST_SRC) | $(BUILD)/test
	{ grep -ho '^Suite \*suite_[a-z0-9_]*(void)' $(TEST_SRC) | sed 's/$$/;/'; \
	  printf '#define SA_ALL_SUITES(X)'; \
	  grep -ho '^Suite \*suite_[a-z0-9_]*' $(TEST_SRC) | sed 's/^Suite \*/ X(/; s/$$/)/' | tr -d '\n'; echo; } > $@.tmp && mv $@.tmp $@
$(BUILD)/test/%.o: test/%.c $(BUILD)/test/test_suites.h | $(BUILD)/test
	$(CC) $(CFLAGS_ALL) -I$(BUILD)/test -Itest -c $< -o $@
$(TEST_BIN): $(TEST_OBJ) $(LIBA)
	$(CC) -o $@ $(TEST_OBJ) $(LIBA) $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm -lpthread) $(LDLIBS_ALL)

test: all $(TEST_BIN) layers
	SAN="$(SAN)" test/cli/run.sh $(BIN)
	./$(TEST_BIN)

# Fails when a file of lib/ calls into a higher layer (nm of each folder's objects).
layers: $(LIBA)
	scripts/layers.sh $(BUILD)

# What CI and the README run: the suite, the suite under the sanitizers, the
# GPU paths of a build without CUDA, memcheck of every policy on the bundled
# graphs, and the fuzz targets.
check: test asan-test nocuda-check valgrind fuzz

# libFuzzer targets (test/fuzz/) under ASan + UBSan with clang: the seed corpus
# replayed, then FUZZ_SECONDS of fuzzing per target (scripts/fuzz.sh).
FUZZ_SECONDS ?= 30
fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)

# memcheck (scripts/valgrind.sh) on a build without CUDA, whose runtime's own
# loader noise would drown the report.
valgrind:
	$(MAKE) BUILD=build-vg BIN=build-vg/bin NVCC= OPT=-O1 all
	scripts/valgrind.sh build-vg/bin

asan-test:
	$(MAKE) BUILD=build-asan BIN=build-asan/bin OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

nocuda-check:
	$(MAKE) BUILD=build-nocuda BIN=build-nocuda/bin NVCC= build-nocuda/bin/dfg-profile \
	    build-nocuda/bin/swapadvisor-search build-nocuda/bin/swapplan-run
	scripts/nocuda.sh build-nocuda/bin

$(BUILD)/bench/%: bench/%.c $(LIBA) | $(BUILD)/bench
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LIBA) $(LDLIBS_ALL)
bench: all $(BENCHES)
	scripts/bench.sh

$(BUILD)/cmd $(BUILD)/cmd/common $(BUILD)/test $(BUILD)/bench $(BIN):
	mkdir -p $@

clean:
	rm -rf build build-asan build-nocuda build-vg build-fuzz bin

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d $(BUILD)/*/*/*/*.d)

# ---- dfg-from-torch (tools/, Python): a copy in $(BIN) with its package beside it;
# its tests (test/py/, /usr/bin/python3 with Debian's python3-torch) run in `make check`.
PY_TOOL_SRC = $(wildcard tools/dfg_from_torch/*.py)
PY_TOOL     = $(BIN)/dfg-from-torch $(patsubst tools/%,$(BIN)/%,$(PY_TOOL_SRC))
all: $(PY_TOOL)
$(BIN)/dfg-from-torch: tools/dfg-from-torch | $(BIN)
	cp $< $@ && chmod +x $@
$(BIN)/dfg_from_torch/%.py: tools/dfg_from_torch/%.py | $(BIN)
	@mkdir -p $(dir $@)
	cp $< $@
.PHONY: test-py
test-py: all
	test/py/run.sh
check: test-py
