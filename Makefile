# gpulab: the two commands a new user needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/gpulab
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/gpulab/gpulab/cli.Version=$(VERSION)
FUZZTIME ?= 10s
# go-nvml's cgo wrappers call entry points NVML marks deprecated; say so once, not per build.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: build run test probes bench bench-ssh lint fuzz clean

build: ## build bin/gpulab
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

run: build ## open the workbench on the built-in default (no hosts, no hardware)
	./$(BIN)

test: lint ## vet, format check, race-enabled tests including the tmux smoke test and every fuzz target's seed corpus
	$(GO) test -race -count=1 ./...

probes: ## portable NVML probes in dist/ (glibc >= 2.28, amd64 + arm64), embedded by the next build
	probes/build.sh dist

bench: build ## View() benchmarks and start-up to first frame
	$(GO) test -run '^$$' -bench . -benchmem ./...
	bench/startup.sh $(BIN)

bench-ssh: ## exec and probe vs parallel-ssh, clush, ansible on 50 real sshd; exec's memory per host (apt-get install openssh-server pssh clustershell ansible-core time)
	$(GO) test -tags bench -run 'TestFanOutBenchmark|TestProbeBenchmark|TestRunbookBenchmark|TestExecMemoryBenchmark' -v -count=1 -timeout 30m ./bench

lint: ## gofmt and go vet
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

fuzz: ## each fuzz target for $(FUZZTIME)
	$(GO) test -run '^$$' -fuzz '^FuzzIndex$$' -fuzztime $(FUZZTIME) ./internal/tomlpos
	$(GO) test -run '^$$' -fuzz '^FuzzFoldExpand$$' -fuzztime $(FUZZTIME) ./inventory
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./inventory
	$(GO) test -run '^$$' -fuzz '^FuzzCatalogFile$$' -fuzztime $(FUZZTIME) ./landscape
	for f in FuzzParsers FuzzTopo FuzzSMI FuzzSMIList FuzzDmesgXid FuzzWorkloads; do \
		$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./runbooks/parse || exit 1; done

clean:
	rm -rf bin dist probes/bundle/bin/nvml*
