# The README's two commands. Everything else is CMake (build/).
#   make test    configure, build, run every test (GPU tests skip with 77 where no GPU is present)
#   make bench   configure, build, run the benchmark suite on all local GPUs
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build test bench clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure --no-tests=error $(CTEST_FLAGS)

bench: build
	bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
