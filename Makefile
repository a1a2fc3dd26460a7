# gpucc's two entry points, both runnable on a fresh Debian machine as root:
#   make demo   installs what is missing, builds gpucc, runs the examples
#   make test   installs what is missing, checks formatting and vet, runs every test
# Everything real: WebGPU runs on Mesa's lavapipe, wasm kernels on Clang + wazero,
# browser tests in Debian's Chromium.

SHELL := /bin/bash
export XDG_RUNTIME_DIR ?= /tmp
# Backends that cannot start make their tests fail instead of skip.
export GPUCC_REQUIRE_WEBGPU = 1
export GPUCC_REQUIRE_WASM = 1
export GPUCC_REQUIRE_NATIVE = 1
export GPUCC_REQUIRE_GLSL = 1
export GPUCC_REQUIRE_BROWSER = 1
export GPUCC_REQUIRE_CC = 1

PACKAGES := mesa-vulkan-drivers libvulkan1 clang lld glslang-tools chromium python3-numpy
GO ?= go

.PHONY: demo test deps build vet fuzz

deps:
	@missing=$$(for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

build:
	$(GO) build -o gpucc ./cmd/gpucc

demo: deps build
	@for f in examples/*.json; do \
		echo "== gpucc run --backend auto --allow-software $$f"; \
		./gpucc run --backend auto --allow-software $$f 2>/dev/null || exit 1; \
	done
	@echo "== gpucc info"; ./gpucc info 2>/dev/null

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

fuzz:
	$(GO) test ./ir/ -run XXX -fuzz FuzzDecode -fuzztime 20s
	$(GO) test ./passes/ -run XXX -fuzz FuzzPipeline -fuzztime 20s

test: deps vet
	$(GO) test -count=1 -timeout 40m ./...
	$(MAKE) fuzz
