# gpulab: the two commands a new user needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/gpulab
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/gpulab/gpulab/cli.Version=$(VERSION)
FUZZTIME ?= 10s
# go-nvml's cgo wrappers call entry points NVML marks deprecated; say so once, not per build.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: build run test probes kube-testenv bench bench-kube bench-ssh lint fuzz docs man clean readme-screen

# The NVML probes gpulab embeds (probes/bundle/bin/*.gz). `make build` makes
# the ones for this machine's architecture with the native cgo toolchain (Go,
# make and gcc are enough): nvmlprobe-linux-ARCH, pushed to hosts, and
# nvmlsim-linux-ARCH, the simulator build for --mock and the tests. They need
# this machine's glibc; gpulab refuses an older host before it pushes and
# names `make probes`. `make probes` builds the portable ones (glibc >= 2.28,
# amd64 + arm64) under the same names and wins: probes/build.sh lists what it
# wrote in probes/bundle/bin/.portable, and no native probe is built over a
# name listed there. `make clean` removes both kinds.
BUNDLE   := probes/bundle/bin
HOST     := $(shell $(GO) env GOHOSTOS GOHOSTARCH)
HOSTARCH := $(word 2,$(HOST))
NATIVE_PROBES := $(BUNDLE)/nvmlprobe-linux-$(HOSTARCH).gz $(BUNDLE)/nvmlsim-linux-$(HOSTARCH).gz
ifeq ($(word 1,$(HOST)),linux)
NATIVE := $(filter-out $(addprefix $(BUNDLE)/,$(shell cat $(BUNDLE)/.portable 2>/dev/null)),$(NATIVE_PROBES))
endif
# A native probe is rebuilt when a Go file of a package it is built from (go
# list follows its imports within this module) or the module's requirements
# change, and only then.
PROBE_PKGS := $(shell $(GO) list -deps -f '{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}' ./probes/nvmlprobe)
PROBE_SRC  := $(filter-out %_test.go,$(foreach d,$(PROBE_PKGS),$(wildcard $(d)/*.go))) go.mod go.sum

build: $(NATIVE) ## build bin/gpulab, with the native probes unless `make probes` made portable ones
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

# The same flags as probes/build.sh, without its sysroot: nosim for the probe
# hosts get, the simulator for nvmlsim.
$(BUNDLE)/nvmlprobe-linux-$(HOSTARCH).gz: PROBE_TAGS := netgo,osusergo,nosim
$(BUNDLE)/nvmlsim-linux-$(HOSTARCH).gz: PROBE_TAGS := netgo,osusergo
$(NATIVE_PROBES): $(PROBE_SRC)
	@mkdir -p build/native
	CGO_ENABLED=1 GOOS=linux GOARCH=$(HOSTARCH) CGO_CFLAGS='-O2 -Wno-deprecated-declarations' \
		$(GO) build -tags $(PROBE_TAGS) -trimpath -ldflags '-s -w -X main.version=$(VERSION)' -o build/native/$(basename $(@F)) ./probes/nvmlprobe
	gzip -9 -c build/native/$(basename $(@F)) > build/native/$(@F) && mv build/native/$(@F) $@

run: build ## open the workbench on the built-in default: a SIMULATED DGX A100 fleet in this process (no hardware, no inventory)
	./$(BIN)

# Each package's test binary gets TEST_TIMEOUT, far past what the slowest
# takes on a busy 2-core machine: a test that waits has a deadline of its
# own that says what it waited for; this one only stops a hang.
TEST_TIMEOUT ?= 40m

test: lint $(NATIVE) ## vet, format check, race-enabled tests including the tmux smoke test and every fuzz target's seed corpus; ends with a line counting the tests skipped for want of a tool
	@log=$$(mktemp); rc=0; \
	GPULAB_SKIP_LOG=$$log $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./... || rc=$$?; \
	tools/skipped.sh $$log; rm -f $$log; exit $$rc

probes: ## portable NVML probes in dist/ (glibc >= 2.28, amd64 + arm64), embedded by the next build
	probes/build.sh dist

# The control plane the kube tests start (internal/kubetest): etcd,
# kube-apiserver, kube-scheduler and kwok built from tools/kube (its own
# modules, never imported by gpulab) into
# $${GPULAB_KUBE_CACHE:-~/.cache/gpulab-kube}/<versions>/bin, where the tests
# look. Cold: 6-11 minutes on 2 cores; warm: nothing to do.
kube-testenv: ## build the kube tests' control plane (etcd, kube-apiserver, kube-scheduler, kwok) once, into ~/.cache/gpulab-kube or $$GPULAB_KUBE_CACHE
	GO=$(GO) tools/kube/build.sh

bench: build ## View() benchmarks, start-up to first frame, and gpulab on a simulated fleet of 1,000 hosts (first and pooled command, peak RSS; parallel-ssh beside it when installed)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	bench/startup.sh $(BIN)
	$(GO) test -tags bench -run 'TestSimFleetBenchmark' -v -count=1 -timeout 10m ./bench

bench-ssh: ## exec and probe vs parallel-ssh, clush, ansible on 50 real sshd; exec's memory per host (apt-get install openssh-server pssh clustershell ansible-core time)
	$(GO) test -tags bench -run 'TestFanOutBenchmark|TestProbeBenchmark|TestRunbookBenchmark|TestExecMemoryBenchmark' -v -count=1 -timeout 30m ./bench

bench-kube: kube-testenv ## gpulab cluster vs kubectl on a real API server with 1,000 kwok nodes and 20,000 pods; exec and probe --via kube on 1,000 simulated nodes vs a kubectl debug loop (builds kubectl of the same version once, into the kube cache)
	GO=$(GO) tools/kube/build-kubectl.sh
	$(GO) test -tags bench -run 'TestKubeBenchmark|TestKubeProbeBenchmark' -v -count=1 -timeout 30m ./bench

lint: ## gofmt and go vet
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

fuzz: ## each fuzz target for $(FUZZTIME)
	$(GO) test -run '^$$' -fuzz '^FuzzIndex$$' -fuzztime $(FUZZTIME) ./internal/tomlpos
	$(GO) test -run '^$$' -fuzz '^FuzzFoldExpand$$' -fuzztime $(FUZZTIME) ./inventory
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./inventory
	$(GO) test -run '^$$' -fuzz '^FuzzCatalogFile$$' -fuzztime $(FUZZTIME) ./landscape
	for f in FuzzParsers FuzzTopo FuzzSMI FuzzSMIList FuzzDmesgXid FuzzWorkloads; do \
		$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./step/parse || exit 1; done

readme-screen: build ## take README.md's picture of the first screen again, from plain gpulab at 80x24 in tmux (a test checks it is current)
	$(GO) test -count=1 -run '^TestReadmeFirstScreenIsCurrent$$' -update-readme .

docs: build ## write docs/reference/ again from the commands' own help (a test checks it is current)
	rm -rf docs/reference && ./$(BIN) docs docs/reference

man: build ## man pages for every command in build/man (man -l build/man/gpulab.1)
	./$(BIN) docs --man build/man

clean:
	rm -rf bin dist build/native $(BUNDLE)/nvml* $(BUNDLE)/.portable
