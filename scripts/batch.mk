# scripts/batch.mk - plan many graphs x memories x policies in parallel with make -j.
#
#   make -f scripts/batch.mk -j4 \
#        GRAPHS="wrn.p.json vgg.p.json" MEMORIES="0.5x 0.25x 16GiB" \
#        POLICIES="swapadvisor odswap vdnn" ARGS="--generations 20 --threads 1" OUT=batch
#
# Each cell (graph, memory, policy) is one make target: scripts/batch-cell.sh
# runs swapadvisor-search and swapplan-emit --format check --strict and writes
# OUT/rows/STEM__MEM__POLICY.csv (and the plan and its log under OUT/plans/).
# The table OUT/batch.csv is the header and every row, graph by graph, memory
# by memory, policy by policy:
#   graph,memory,policy,iteration_us,pct_of_ideal,validity,exit_code
# make exits non-zero (after writing the table) when any cell failed: a
# search that exited non-zero (5: the graph cannot run in that memory) or a
# plan the check rejects.  Resumable: a cell whose row exists is not planned
# again (make's own rule: the row is newer than its graph); an interrupted run
# leaves no partial row.  `make -f scripts/batch.mk ... clean-failed` removes
# the failed cells' rows so that the next run retries only them.
#
# Variables: GRAPHS (profiled graphs; distinct file names), MEMORIES (as
# --memory takes them), POLICIES (swapadvisor-search --list-policies), ARGS
# (more swapadvisor-search options, the same for every cell), OUT (default
# batch), BIN (the tools; default this checkout's bin/).  docs/batch.md.

SA_ROOT  := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
BIN      ?= $(SA_ROOT)/bin
OUT      ?= batch
ARGS     ?=
GRAPHS   ?=
MEMORIES ?=
POLICIES ?=

ifneq ($(filter-out clean-failed,$(or $(MAKECMDGOALS),all)),)
  ifeq ($(and $(strip $(GRAPHS)),$(strip $(MEMORIES)),$(strip $(POLICIES))),)
    $(error batch.mk: set GRAPHS, MEMORIES and POLICIES (see the header of scripts/batch.mk))
  endif
endif

stem = $(basename $(notdir $1))
ifneq ($(words $(sort $(foreach g,$(GRAPHS),$(call stem,$g)))),$(words $(GRAPHS)))
  $(error batch.mk: two GRAPHS share a file name; their rows would collide)
endif
cell = $(OUT)/rows/$(call stem,$1)__$2__$3
ROWS := $(foreach g,$(GRAPHS),$(foreach m,$(MEMORIES),$(foreach p,$(POLICIES),$(call cell,$g,$m,$p).csv)))

.PHONY: all clean-failed FORCE
all: $(OUT)/batch.csv
	@awk -F, 'NR > 1 && ($$(NF - 1) != "valid" || $$NF != 0) { n++; \
	   printf "batch: failed: %s (exit %s, %s)\n", $$0, $$NF, $$(NF - 1) > "/dev/stderr" } \
	   END { if (n) printf "batch: %d of %d cells failed (%s)\n", n, NR - 1, FILENAME > "/dev/stderr"; exit n > 0 }' $<

# rebuilt every run (a concatenation): it lists exactly this run's cells
$(OUT)/batch.csv: $(ROWS) FORCE
	@{ echo graph,memory,policy,iteration_us,pct_of_ideal,validity,exit_code; \
	   $(if $(ROWS),cat $(ROWS);) } > $@.tmp.$$$$ && mv -f $@.tmp.$$$$ $@
	@echo "batch: $@ ($(words $(ROWS)) cells)"

define CELL_RULE
$(call cell,$1,$2,$3).csv: $1 | $(OUT)/rows $(OUT)/plans
	@echo "batch: planning $(call stem,$1) at $2 with $3"
	@$(SA_ROOT)/scripts/batch-cell.sh '$(BIN)' '$1' '$2' '$3' '$$@' '$(OUT)/plans/$(call stem,$1)__$2__$3.json' $(ARGS)
endef
$(foreach g,$(GRAPHS),$(foreach m,$(MEMORIES),$(foreach p,$(POLICIES),$(eval $(call CELL_RULE,$g,$m,$p)))))

$(OUT)/rows $(OUT)/plans:
	@mkdir -p $@

clean-failed:
	@for r in $(OUT)/rows/*.csv; do \
	   [ -e "$$r" ] || continue; \
	   awk -F, '$$(NF - 1) != "valid" || $$NF != 0 { exit 1 }' "$$r" || { echo "batch: removing $$r"; rm -f "$$r"; }; \
	 done

FORCE:
