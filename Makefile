# swapadvisor - build the static library, the CLIs, the tests and the benchmarks.
#
#   make            library + every CLI into bin/ (warnings shown, not fatal)
#   make DEV=1      the same with -Werror (the development and CI build)
#   make test       test/cli/run.sh (CLI behaviours as data), the Check suite (Check's
#                   summary line), after `make layers` and `make shape`, then the
#                   packaging checks (scripts/package_test.sh); with -Werror
#   make shape      no long function without a reason, no code written twice, no
#                   lib/ file over 800 lines (docs/architecture.md)
#   make asan-test  the CLI cases and the Check suite under AddressSanitizer + UBSan
#                   (build-asan/): make asan-cli and make asan-checks, after make asan-build
#   make nocuda-check  the build without nvcc (build-nocuda/): its GPU paths exit 7
#                   with gpu_none.c's one message (scripts/nocuda.sh)
#   make valgrind   memcheck of every policy on two small zoo graphs (scripts/valgrind.sh)
#   make fuzz       libFuzzer targets of test/fuzz/, FUZZ_SECONDS each (scripts/fuzz.sh)
#   make check      all of these and test-py (what CI runs), with -Werror, the
#                   builds with CHECK_JOBS=2 jobs, two phases at a time (scripts/check.sh)
#   make install PREFIX=/usr/local [DESTDIR=]   bin/, lib/libswapadvisor.a,
#                   include/swapadvisor/, lib/pkgconfig/swapadvisor.pc, man pages,
#                   share/swapadvisor/{profiles,schemas}, share/doc/swapadvisor
#   make uninstall PREFIX=...
#   make bench      benchmarks; figures land in bench/results/
#   make clean
#
# lib/ is one static library in layers, one folder each, subfolders included
# (docs/architecture.md):
#   core < model < zoo < planning < search < policies < emit < serve < cuda < runner
# a layer calls only its own layer or lower ones; `make layers` checks it.
# CUDA sources (lib/cuda/*.cu) are built when nvcc is on PATH; otherwise
# lib/cuda/gpu_none.c stands in and the GPU paths report that the build has no CUDA.
# That choice of files is the one CUDA boundary: no source tests for CUDA with #if.
# cmd/mpi/ (swapadvisor-search-mpi) is built when mpicc is on PATH; the library
# never depends on MPI.

CC      ?= gcc
NVCC    ?= $(shell command -v nvcc 2>/dev/null)
MPICC   ?= $(shell command -v mpicc 2>/dev/null)
BUILD   ?= build
BIN     ?= bin
OPT     ?= -O2
SAN     ?=
DEV     ?=
PREFIX  ?= /usr/local
DESTDIR ?=

WARN = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wpointer-arith -Wwrite-strings -Wformat=2 -Wundef -Wvla -Wcast-align \
       -Wnull-dereference -Wdouble-promotion -Wno-format-truncation $(if $(DEV),-Werror)
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(OPT) -g -fopenmp $(WARN) $(SAN) -Iinclude -Ilib/include -Ilib -MMD -MP $(CFLAGS)
BASE_LIBS  = -lcjson -lm -fopenmp
LDLIBS_ALL = $(BASE_LIBS) $(SAN) $(LDLIBS)

# Optional MILP / LP solvers (docs/bound.md): COIN-OR CBC through pkg-config,
# GLPK by its header.  Without either, --policy optimal exits 2 and --bound
# uses the combinatorial bound.  NO_SOLVER=1 builds as if neither were there.
ifeq ($(NO_SOLVER),)
  HAVE_CBC  := $(shell pkg-config --exists cbc 2>/dev/null && echo 1)
  HAVE_GLPK := $(shell test -f /usr/include/glpk.h && echo 1)
endif
# SOLVER_LIBS are also in swapadvisor.pc's Libs: the static library calls them.
SOLVER_LIBS :=
ifeq ($(HAVE_CBC),1)
  CFLAGS_ALL += -DSA_HAVE_CBC=1 $(patsubst -I%,-isystem %,$(shell pkg-config --cflags cbc))
  SOLVER_LIBS += $(shell pkg-config --libs cbc)
endif
ifeq ($(HAVE_GLPK),1)
  CFLAGS_ALL += -DSA_HAVE_GLPK=1
  SOLVER_LIBS += -lglpk
endif
LDLIBS_ALL += $(SOLVER_LIBS)

LAYERS   = core model zoo planning search policies emit serve cuda runner
LIB_SRC  = $(foreach l,$(LAYERS),$(wildcard lib/$(l)/*.c lib/$(l)/*/*.c))
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
  CUDA_LIBS = $(foreach d,$(CUDA_LIBDIRS),-L$(d) -Wl,-rpath,$(d)) -Wl,--as-needed -lcudnn -lcublas -lcudart -lstdc++ -Wl,--no-as-needed
  LDLIBS_ALL += $(CUDA_LIBS)
  # CUDA 13 dropped Volta (sm_70): the V100 profile is analytic only.
  NVCCFLAGS ?= -O2 -std=c++17 -Iinclude -Ilib/include -Ilib -Xcompiler -Wall,-fPIC \
     -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
else
  CU_SRC :=
  CU_OBJ :=
  $(info nvcc not found: building without CUDA (GPU paths will report it))
endif

MPI_SRC = $(wildcard cmd/mpi/*.c)
ifneq ($(MPICC),)
  MPI_CMDS = $(patsubst cmd/mpi/%.c,$(BIN)/%,$(MPI_SRC))
else
  MPI_CMDS :=
  $(info mpicc not found: swapadvisor-search-mpi is not built)
endif

LIB_OBJ  = $(patsubst lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRC)) $(CU_OBJ)
LIBA     = $(BUILD)/libswapadvisor.a
CLIA     = $(BUILD)/libsacli.a
CLI_OBJ  = $(patsubst cmd/common/%.c,$(BUILD)/cmd/common/%.o,$(CLI_SRC))
CMDS     = $(patsubst cmd/%.c,$(BIN)/%,$(CMD_SRC))
TEST_OBJ = $(patsubst test/%.c,$(BUILD)/test/%.o,$(TEST_SRC) test/check_main.c)
TEST_BIN = $(BUILD)/test/run_tests
BENCHES  = $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all test asan-test asan-build asan-checks asan-cli nocuda-check check bench clean layers install uninstall \
        man package-test FORCE valgrind fuzz print-ldlibs
all: $(LIBA) $(CMDS) $(MPI_CMDS)

# The development build: warnings are errors for the test targets (and with
# DEV=1); a user's plain `make` only shows them.  -Werror changes no object
# code, so objects built either way are reused (CI builds from scratch).
test asan-test asan-build asan-checks asan-cli nocuda-check check package-test: DEV = 1

$(BUILD)/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@
$(BUILD)/lib/%.cu.o: lib/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@
# The HTML report's script, lib/emit/report.js, as C strings (one a line:
# ISO C caps the length of one string literal).
$(BUILD)/gen/report_js.h: lib/emit/report.js
	@mkdir -p $(dir $@)
	{ echo '/* generated from lib/emit/report.js by the Makefile */'; echo 'static const char *const REPORT_JS[] = {'; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n",/' $<; echo '    NULL};'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/lib/emit/emit_html.o: $(BUILD)/gen/report_js.h
$(BUILD)/lib/emit/emit_html.o: CFLAGS_ALL += -I$(BUILD)/gen

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
# Kept, not deleted as intermediates: their .d files name them, so the next
# make would rebuild them and relink $(BIN), two phases of make check at once.
.SECONDARY: $(patsubst cmd/%.c,$(BUILD)/cmd/%.o,$(CMD_SRC))
# MPI front ends: mpicc wraps $(CC) (OMPI_CC / MPICH_CC) with MPI's flags.
$(BUILD)/cmd/mpi/%.o: cmd/mpi/%.c | $(BUILD)/cmd/mpi
	OMPI_CC=$(CC) MPICH_CC=$(CC) $(MPICC) $(CFLAGS_ALL) -Icmd/common -c $< -o $@
$(MPI_CMDS): $(BIN)/%: $(BUILD)/cmd/mpi/%.o $(CLIA) $(LIBA) | $(BIN)
	OMPI_CC=$(CC) MPICH_CC=$(CC) $(MPICC) -o $@ $< $(CLIA) $(LIBA) $(LDLIBS_ALL)

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

test: all $(TEST_BIN) layers shape
	SAN="$(SAN)" test/cli/run.sh $(BIN)
	./$(TEST_BIN)
	$(if $(SAN),,$(MAKE) --no-print-directory package-test)

# Help and option conventions, man pages, `make install` into a temporary
# PREFIX and a program built against it with pkg-config alone, and every
# example and produced document against schemas/ (scripts/package_test.sh).
package-test: all
	scripts/package_test.sh $(BIN) $(BUILD)

# Fails when a file of lib/ calls into a higher layer (nm of each folder's objects).
layers: $(LIBA)
	scripts/layers.sh $(BUILD)

# The shape of the code: no function over 150 lines without a comment saying
# why (scripts/long_functions.py), no run of 12 lines written twice
# (scripts/duplicates.py), no file of lib/ over 800 lines.
shape:
	scripts/long_functions.py --check
	scripts/duplicates.py --check
	@wc -l $(wildcard lib/*/*.[ch] lib/*/*/*.[ch] lib/*/*.cu) | \
	  awk '$$2 != "total" && $$1 > 800 { print "shape: " $$2 " has " $$1 " lines, over 800"; bad = 1 } END { exit bad }'

# What CI and the README run: the suite, the suite under the sanitizers, the
# GPU paths of a build without CUDA, memcheck, the fuzz targets and the Python
# tests (scripts/check.sh): every build with CHECK_JOBS jobs, CHECK_LANES of
# the phases at a time (1: one after the other).
CHECK_JOBS ?= 2
CHECK_LANES ?= 2
check:
	MAKE="$(MAKE)" CHECK_JOBS=$(CHECK_JOBS) CHECK_LANES=$(CHECK_LANES) scripts/check.sh

# libFuzzer targets (test/fuzz/) under ASan + UBSan with clang: the seed corpus
# replayed, then FUZZ_RUNS inputs (20000, seed FUZZ_SEED) per target, at most
# FUZZ_SECONDS each (scripts/fuzz.sh).
FUZZ_SECONDS ?= 30
fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)

# The libraries a program linked against libswapadvisor.a needs (scripts/fuzz.sh).
print-ldlibs:
	@echo $(LDLIBS_ALL)

# memcheck (scripts/valgrind.sh) on a build without CUDA, whose runtime's own
# loader noise would drown the report.
valgrind:
	$(MAKE) BUILD=build-vg BIN=build-vg/bin NVCC= OPT=-O1 all
	scripts/valgrind.sh build-vg/bin

# The sanitizer build checks our code for memory errors and undefined
# behaviour, so it runs what `make test` runs of C, smaller where a smaller
# size reaches the same code (each knob's test says what it keeps):
#   SA_FUZZ_GRAPHS=100    test_pool's fuzz test: the first 100 of its 300
#                         random graphs, which reach every outcome it counts
#   SA_ROBUST_GRAPHS=100  test_robust's random graphs: the first 100 of 300,
#                         every policy planning and refusing among them
#   SA_BOUND_BUNDLED=1    test_bound on the bundled vgg-11 alone, not rnn-2-1k
#                         and resnet-50 (9 minutes, mostly in the uninstrumented
#                         LP and MILP solvers)
# and skips the CLI cases marked nosan in test/cli/cases.tsv (their comments
# say what covers them here).  layers, shape and package-test read no object
# code of this build and run in `make test`.  asan-checks takes
# SA_CHECK_SUITES (test/check_main.c) to run part of the suite.
ASAN_SAN = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_ENV = LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp:print_suppressions=0 \
           SA_FUZZ_GRAPHS=100 SA_ROBUST_GRAPHS=100 SA_BOUND_BUNDLED=1
asan-build:
	$(MAKE) DEV=1 BUILD=build-asan BIN=build-asan/bin OPT=-O1 SAN="$(ASAN_SAN)" all build-asan/test/run_tests
asan-checks: asan-build
	$(ASAN_ENV) ./build-asan/test/run_tests
asan-cli: asan-build
	$(ASAN_ENV) SAN="$(ASAN_SAN)" test/cli/run.sh build-asan/bin
asan-test: asan-cli asan-checks

nocuda-check:
	$(MAKE) DEV=1 BUILD=build-nocuda BIN=build-nocuda/bin NVCC= build-nocuda/bin/dfg-profile \
	    build-nocuda/bin/swapadvisor-search build-nocuda/bin/swapplan-run
	scripts/nocuda.sh build-nocuda/bin

$(BUILD)/bench/%: bench/%.c $(LIBA) | $(BUILD)/bench
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LIBA) $(LDLIBS_ALL)
bench: all $(BENCHES)
	scripts/bench.sh

# ---- installation ----
bindir      = $(PREFIX)/bin
libdir      = $(PREFIX)/lib
includedir  = $(PREFIX)/include
datadir     = $(PREFIX)/share/swapadvisor
mandir      = $(PREFIX)/share/man/man1
docdir      = $(PREFIX)/share/doc/swapadvisor
INSTALL_CMDS = $(CMDS) $(MPI_CMDS)
PY_CMDS     = dfg-from-torch swapplan-torch
MANS        = $(patsubst $(BIN)/%,$(BUILD)/man/%.1,$(INSTALL_CMDS) $(addprefix $(BIN)/,$(PY_CMDS)))
pylibdir    = $(PREFIX)/lib/swapadvisor
SA_VERSION  = $(shell sed -n 's/^\#define SA_VERSION "\(.*\)"/\1/p' include/swapadvisor/sa_common.h)

# man pages from each tool's --help (scripts/mkman.sh)
$(BUILD)/man/%.1: $(BIN)/% scripts/mkman.sh
	@mkdir -p $(dir $@)
	scripts/mkman.sh $< $@ $(SA_VERSION)
man: $(MANS)

# The library is static: its own dependencies go in Libs, not Libs.private.
$(BUILD)/swapadvisor.pc: swapadvisor.pc.in FORCE
	@mkdir -p $(dir $@)
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(SA_VERSION)|' -e 's|@LIBS@|$(BASE_LIBS) $(SOLVER_LIBS) $(CUDA_LIBS)|' $< > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

install: all $(MANS) $(BUILD)/swapadvisor.pc
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(libdir)/pkgconfig $(DESTDIR)$(includedir)/swapadvisor \
	  $(DESTDIR)$(mandir) $(DESTDIR)$(datadir)/profiles $(DESTDIR)$(datadir)/schemas $(DESTDIR)$(docdir)
	install -m 755 $(INSTALL_CMDS) $(DESTDIR)$(bindir)/
	install -m 644 $(LIBA) $(DESTDIR)$(libdir)/
	install -m 644 include/swapadvisor/*.h $(DESTDIR)$(includedir)/swapadvisor/
	install -m 644 $(BUILD)/swapadvisor.pc $(DESTDIR)$(libdir)/pkgconfig/
	install -m 644 $(MANS) $(DESTDIR)$(mandir)/
	install -m 644 profiles/*.json $(DESTDIR)$(datadir)/profiles/
	install -m 644 schemas/*.json $(DESTDIR)$(datadir)/schemas/
	install -m 644 README.md LICENSE $(filter-out docs/notes.md,$(wildcard docs/*.md)) $(DESTDIR)$(docdir)/
	# the Python tools find their package beside their real path: both under lib/swapadvisor
	install -d $(DESTDIR)$(pylibdir)/swapadvisor
	install -m 755 $(addprefix tools/,$(PY_CMDS)) $(DESTDIR)$(pylibdir)/
	install -m 644 $(PY_TOOL_SRC) $(DESTDIR)$(pylibdir)/swapadvisor/
	for c in $(PY_CMDS); do ln -sf ../lib/swapadvisor/$$c $(DESTDIR)$(bindir)/$$c; done

uninstall:
	rm -f $(foreach c,$(INSTALL_CMDS) $(PY_CMDS),$(DESTDIR)$(bindir)/$(notdir $(c)) $(DESTDIR)$(mandir)/$(notdir $(c)).1)
	rm -rf $(DESTDIR)$(pylibdir)
	rm -f $(DESTDIR)$(libdir)/libswapadvisor.a $(DESTDIR)$(libdir)/pkgconfig/swapadvisor.pc
	rm -rf $(DESTDIR)$(includedir)/swapadvisor $(DESTDIR)$(datadir) $(DESTDIR)$(docdir)

$(BUILD)/cmd $(BUILD)/cmd/common $(BUILD)/cmd/mpi $(BUILD)/test $(BUILD)/bench $(BIN):
	mkdir -p $@

clean:
	rm -rf build build-asan build-nocuda build-vg build-fuzz bin

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d $(BUILD)/*/*/*/*.d)

# ---- dfg-from-torch (tools/, Python): a copy in $(BIN) with its package beside it;
# its tests (test/py/, /usr/bin/python3 with Debian's python3-torch) run in `make check`.
PY_TOOL_SRC = $(wildcard tools/swapadvisor/*.py)
PY_TOOL     = $(addprefix $(BIN)/,$(PY_CMDS)) $(patsubst tools/%,$(BIN)/%,$(PY_TOOL_SRC))
all: $(PY_TOOL)
$(addprefix $(BIN)/,$(PY_CMDS)): $(BIN)/%: tools/% | $(BIN)
	cp $< $@ && chmod +x $@
$(BIN)/swapadvisor/%.py: tools/swapadvisor/%.py | $(BIN)
	@mkdir -p $(dir $@)
	cp $< $@
.PHONY: test-py shape
test-py: all
	test/py/run.sh
