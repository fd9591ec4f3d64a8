# The README's two commands. Everything else is CMake (build/).
#   make test       configure, build, run every test but the `slow` ones (GPU tests skip with 77
#                   where no GPU is present), then a line of counts and each skipped test's reason
#   make bench      configure, build, run the benchmark suite on all local GPUs
# and beside them:
#   make test-slow  the tests labelled `slow` only: the whole sweeps that `make test` samples
#   make docs       the API reference from include/weft.h (Doxygen) in $(BUILD)/docs/html
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# `slow` tests run only where CTEST_FLAGS names the label (e.g. CTEST_FLAGS="-L slow").
SLOW_FLAGS = $(if $(findstring slow,$(CTEST_FLAGS)),,-LE slow)
# ctest's JUnit report: tests/summary.sh counts skips from it (ctest's own line counts them as
# passes). The status of the recipe is ctest's.
JUNIT = Testing/Temporary/weft-junit.xml
CTEST = cd $(BUILD) || exit 1; rm -f $(JUNIT); \
	ctest --output-on-failure --no-tests=error --output-junit $(JUNIT) $(1); \
	rc=$$?; sh $(CURDIR)/tests/summary.sh $(JUNIT); exit $$rc

.PHONY: all build test test-slow bench docs clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	$(call CTEST,$(SLOW_FLAGS) $(CTEST_FLAGS))

test-slow: build
	$(call CTEST,-L slow $(CTEST_FLAGS))

bench: build
	bash bench/run.sh $(BUILD)

docs: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) --target docs

clean:
	rm -rf $(BUILD)
