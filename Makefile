# Thin wrapper: everything real lives in CMake. `make run` and `make test` work on a fresh Debian 12.
BUILD   := build/dev
JOBS    ?= $(shell nproc)
SPEC    ?= resources/runs/quickstart.toml
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_DIR ?= $(HOME)/.cache/ccache
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: all deps configure build run test bench screenshots package clean

all: build

deps:
	packaging/deps.sh

$(BUILD)/build.ninja:
	cmake --preset dev

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Opens the console with the quick-start run ready; without a display, runs it in the terminal.
run: build
	@if [ -x $(BUILD)/app/parallax ] && { [ -n "$$DISPLAY" ] || [ -n "$$WAYLAND_DISPLAY" ]; }; then \
	  $(BUILD)/app/parallax --spec $(SPEC); \
	else \
	  echo "No display: running $(SPEC) in the terminal"; \
	  $(BUILD)/app/parallax-cli run $(SPEC); \
	fi

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

bench: build
	cmake --build $(BUILD) --target bench

screenshots: build
	cmake --build $(BUILD) --target screenshots

# build/dev/parallax_<version>_<arch>.deb: install it with `apt install ./build/dev/parallax_*.deb`.
package: build
	cmake --build $(BUILD) --target package

clean:
	rm -rf build
