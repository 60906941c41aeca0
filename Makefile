# slotplane: every tool is built here from pinned module versions into a cache outside the work
# tree ($(CACHE)), keyed by what pins it, so a fresh clone on the same machine reuses it.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go
CACHE ?= $(HOME)/.cache/slotplane

KUBE_VERSION := v1.36.3
KWOK_VERSION := v0.7.0
CONTROLLER_GEN_VERSION := v0.23.0
WORKFLOWCHECK_VERSION := v0.6.0

# The image `make image` writes, as deploy/kustomization.yaml's images entry names it (a
# test in deploy/ holds the two equal: change both). make image VERSION=... tags another.
IMAGE := ghcr.io/slotplane/slotplane
VERSION := v0.1.0
IMAGE_TAR := bin/slotplane-image.tar

# kube-apiserver, kube-scheduler and etcd come from tools/kube, a module of its own so the
# Kubernetes server code never enters the project's go.mod. Its folder name changes whenever
# the pins or the mains change.
KUBE_KEY := $(shell cat tools/kube/go.mod tools/kube/go.sum tools/kube/*/main.go | sha256sum | cut -c1-16)
KUBE_BIN := $(CACHE)/kube-$(KUBE_VERSION)-$(KUBE_KEY)
# temporal-server and temporal-sql-tool come from tools/temporal, a module of its own pinning
# go.temporal.io/server, for tests against a Temporal shaped as in production: its own process,
# on PostgreSQL, over TLS (internal/localplatform/temporalcluster). The folder name changes
# whenever the pins change.
TEMPORAL_VERSION := v1.32.1
TEMPORAL_KEY := $(shell cat tools/temporal/go.mod tools/temporal/go.sum | sha256sum | cut -c1-16)
TEMPORAL_BIN := $(CACHE)/temporal-$(TEMPORAL_VERSION)-$(TEMPORAL_KEY)
KWOK := $(CACHE)/bin/kwok-$(KWOK_VERSION)
CONTROLLER_GEN := $(CACHE)/bin/controller-gen-$(CONTROLLER_GEN_VERSION)
WORKFLOWCHECK := $(CACHE)/bin/workflowcheck-$(WORKFLOWCHECK_VERSION)

# What the local control plane reads to find its binaries (internal/localplatform/localcluster), and what
# the generated-files test runs.
export SLOTPLANE_KUBE_BIN := $(KUBE_BIN)
export SLOTPLANE_TEMPORAL_BIN := $(TEMPORAL_BIN)
export SLOTPLANE_KWOK := $(KWOK)
export SLOTPLANE_CONTROLLER_GEN := $(CONTROLLER_GEN)
export SLOTPLANE_CACHE := $(CACHE)

# The API packages controller-gen reads; the CRD YAML lands in crds/manifests. The operators'
# CRDs (for clusters without the operators: local runs and tests) are made without field
# descriptions: theirs repeat the Pod's three times and came to 2.4 MB of YAML, which a
# CRD's own size limits barely hold; the operators' released Flink CRD has none either.
API_PACKAGES := ./crds/v1alpha1
OPERATOR_API_PACKAGES := ./crds/spark/v1beta2 ./crds/flink/v1beta1
INTEGRATION_TIMEOUT ?= 30m
# Integration packages run three at a time: most of their time is jobs running and watches
# settling, so a third package keeps the 2 cores busier without slowing the others: each
# package took within 5% of its time two at a time, and the tier 9 min, some 3 min less.
INTEGRATION_PACKAGES_AT_ONCE ?= 3
# The longest integration packages start first (go test runs packages in the order named, as
# far as -p allows), so the tier does not wait at its end for one that started late: bridge
# alone runs 6 to 9 minutes, and in alphabetical order it started after api and activities.
INTEGRATION_FIRST := ./bridge ./activities ./extender ./cmd/slotplane ./api

.PHONY: help
help:
	@echo "make run       the local platform: control plane, fake nodes, Temporal + Web UI, API + dashboard"
	@echo "make demo      the same, and a sample Scheduling of Spark and Flink jobs followed live"
	@echo "make test      lint, unit tests, integration tests, then end-to-end tests (test-unit, test-integration, test-e2e)"
	@echo "make test-long the 1,000-job long run with the worker killed (not in make test)"
	@echo "make test-scale the scale envelope: 8,000 slots, 10,000 jobs, and its table (not in make test)"
	@echo "make run-prod  the production shape, kept up until Ctrl-C"
	@echo "make test-prod the production shape (own Temporal on PostgreSQL, every component replicated) through nine faults (not in make test)"
	@echo "make tools     build the pinned tools into $(CACHE)"
	@echo "make generate  regenerate deepcopy code and CRD YAML"
	@echo "make image     the container image of the binary as an OCI archive, $(IMAGE_TAR), without Docker"
	@echo "make lint      gofmt and go vet"
	@echo "make bench     benchmarks, printed as one table: decisions, placement, orchestration, API"
	@echo "make experiment-burst  the burst trace as an experiment beside its prediction (not in make test)"

# ARGS go to `slotplane dev` (make run ARGS="-nodes 8 -reset"); make demo adds -demo.
.PHONY: run
run: tools build
	@echo ">> starting the local platform (Ctrl-C stops it)"
	exec bin/slotplane dev $(ARGS)

.PHONY: demo
demo: tools build
	@echo ">> starting the local platform with the demo (Ctrl-C stops it)"
	exec bin/slotplane dev -demo $(ARGS)

# The binary is linked with the paths of the tools it runs, so bin/slotplane dev finds them
# without this Makefile's environment (a plain `go build` looks in the cache instead).
.PHONY: build
build:
	$(GO) build -ldflags "-X slotplane/internal/localplatform/localcluster.builtKubeBin=$(KUBE_BIN) -X slotplane/internal/localplatform/localcluster.builtKwok=$(KWOK)" \
	  -o bin/slotplane ./cmd/slotplane

# The image is built in Go (hack/mkimage), so no Docker engine is needed. It holds the static
# binary (CGO_ENABLED=0, -trimpath), run as uid 65532, and takes its revision and every
# timestamp from the commit: two runs on one commit give one digest. The archive is an OCI
# layout and a docker archive at once, for skopeo, crane, podman or docker; mkimage prints
# its digest and the overlay lines that deploy it.
.PHONY: image
image:
	$(GO) run ./hack/mkimage -out $(IMAGE_TAR) -repository $(IMAGE) -version $(VERSION) -go $(GO)

# The tiers run one after another, each timed: the last lines of the output say where the
# time went.
TEST_TIERS := lint test-unit test-fuzz test-integration test-e2e

.PHONY: test
test:
	@took=""; for tier in $(TEST_TIERS); do \
	  start=$$(date +%s); \
	  $(MAKE) --no-print-directory $$tier || exit 1; \
	  took="$$took$$tier $$(( $$(date +%s) - start )) s, "; \
	done; echo "make test passed: $${took%, }"

# Packages whose code and tests run on one goroutine: the race detector has nothing to find
# there, and it made the queue core's randomized and size tests eight times slower (153 s
# against 19 s), the longest package of the tier.
SINGLE_GOROUTINE_PACKAGES := slotplane/queue

.PHONY: test-unit
test-unit: tools
	@if grep -nE '(^|[^a-zA-Z_.])go (func|[a-zA-Z_.]+\()|"sync"' $(patsubst slotplane/%,%/*.go,$(SINGLE_GOROUTINE_PACKAGES)); then \
	  echo "a package of SINGLE_GOROUTINE_PACKAGES starts goroutines or uses sync: test it with -race"; exit 1; fi
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -vxF $(foreach p,$(SINGLE_GOROUTINE_PACKAGES),-e $(p)))
	$(GO) test -count=1 $(SINGLE_GOROUTINE_PACKAGES)

# Every fuzz target on 2,000 inputs (FUZZTIME, default 2000x each; a duration works too):
# hostile input to the parsers and request decoders.
.PHONY: test-fuzz
test-fuzz:
	GO=$(GO) ./hack/fuzz.sh

# Integration tests start real control planes (localcluster) and embedded Temporal servers.
.PHONY: test-integration
test-integration: tools
	$(GO) test -tags integration -count=1 -p $(INTEGRATION_PACKAGES_AT_ONCE) -timeout $(INTEGRATION_TIMEOUT) \
		$$($(GO) list -tags integration $(INTEGRATION_FIRST) ./... | grep -v '/e2e$$' | awk '!seen[$$0]++')

# End-to-end tests: the components as processes of the binary, driven through the REST API.
.PHONY: test-e2e
test-e2e: tools
	$(GO) test -tags integration -count=1 -timeout $(INTEGRATION_TIMEOUT) ./e2e/

# The long runs: 1,000 one-second jobs through one Scheduling with the worker killed three
# times, the Scheduling and Admission workflows continuing as new every 10 steps (make test
# runs the same test with 200 jobs), and StateAware's 5-minute starting timeout firing on
# the platform. Not in CI: the first took 13 minutes (12m31s of jobs, 2026-11-25).
.PHONY: test-long
test-long: tools
	SLOTPLANE_LONG=1 $(GO) test -tags integration -count=1 -timeout 20m -v -run TestQueues_StateAwareStartingTimeoutFires ./bridge/
	SLOTPLANE_LONGRUN_JOBS=1000 $(GO) test -tags integration -count=1 -timeout 120m -v -run TestE2E_LongRunThroughWorkerKills ./e2e/

# The production shape through faults: Temporal as a server of its own on PostgreSQL over
# mutual TLS, its namespace set up by slotplane temporal-namespace, two replicas of every
# slotplane component (leaders elected where one must decide), two kube-schedulers, and
# nine faults during one long Scheduling; it prints each fault's gap in job ends and the
# throughput against the embedded platform's (docs/operations.md). Not in make test: about
# 10 minutes.
.PHONY: test-prod
test-prod: tools
	SLOTPLANE_PROD=1 $(GO) test -tags integration -count=1 -timeout 60m -v -run TestE2E_ProductionShapeThroughFaults ./e2e/

# The same production shape, kept up for trying it by hand until Ctrl-C; it prints where
# each part is.
.PHONY: run-prod
run-prod: tools
	SLOTPLANE_PROD_HOLD=1 $(GO) test -tags integration -count=1 -timeout 0 -v -run TestE2E_ProductionShapeByHand ./e2e/

# The scale envelope: a bed of 1,000 nodes of 8 slots and 10,000 jobs over 50 queues in 10
# Schedulings of both modes, the same nodes as 10 beds, and the 8-slot bed with the same
# mix, and a table of what each cost and how far each object grew (docs/scale.md).
# SCALE_NODES, SCALE_SLOTS_PER_NODE, SCALE_JOBS, SCALE_JOB_SLOTS (each job's executors),
# SCALE_QUEUES, SCALE_SCHEDULINGS, SCALE_JOB_SECONDS and SCALE_BEDS (1: no split) size it;
# the jobs run a third of a second per job the bed holds at once (at least 30 s) unless
# told. SCALE_MEASURE stops each large probe after so many jobs' ends; SCALE_PROFILE names a directory for CPU profiles of every process and the
# history of Admission's run with the longest task; SCALE_ADMISSION_NICE runs Admission's
# worker at that niceness (0: as every other process). Not in CI:
# hours on 2 cores at the full size.
SCALE_NODES ?= 1000
SCALE_SLOTS_PER_NODE ?= 8
SCALE_JOBS ?= 10000
SCALE_JOB_SLOTS ?= 1
SCALE_QUEUES ?= 50
SCALE_SCHEDULINGS ?= 10
SCALE_JOB_SECONDS ?=
SCALE_BEDS ?= 10
SCALE_MEASURE ?=
SCALE_PROFILE ?=
SCALE_ADMISSION_NICE ?= 0
.PHONY: test-scale
test-scale: tools
	SLOTPLANE_ENVELOPE=1 SLOTPLANE_ENVELOPE_NODES=$(SCALE_NODES) SLOTPLANE_ENVELOPE_SLOTS_PER_NODE=$(SCALE_SLOTS_PER_NODE) \
	  SLOTPLANE_ENVELOPE_JOBS=$(SCALE_JOBS) SLOTPLANE_ENVELOPE_JOB_SLOTS=$(SCALE_JOB_SLOTS) SLOTPLANE_ENVELOPE_QUEUES=$(SCALE_QUEUES) SLOTPLANE_ENVELOPE_SCHEDULINGS=$(SCALE_SCHEDULINGS) \
	  SLOTPLANE_ENVELOPE_JOB_SECONDS=$(SCALE_JOB_SECONDS) SLOTPLANE_ENVELOPE_BEDS=$(SCALE_BEDS) \
	  SLOTPLANE_ENVELOPE_MEASURE=$(SCALE_MEASURE) SLOTPLANE_ENVELOPE_PROFILE=$(SCALE_PROFILE) \
	  SLOTPLANE_ENVELOPE_ADMISSION_NICE=$(SCALE_ADMISSION_NICE) $(GO) test -tags integration -count=1 -timeout 300m -v -run TestE2E_ScaleEnvelope ./e2e/

# The burst trace as an experiment on the platform, with the queues and with the FIFO example,
# beside each one's prediction (docs/benchmarks.md, "Measured against predicted"). Not in CI:
# about twelve minutes. The results stay in $${SLOTPLANE_ARTIFACTS:-/tmp/slotplane-artifacts}/experiment-burst.
.PHONY: experiment-burst
experiment-burst: tools
	SLOTPLANE_BURST_EXPERIMENT=1 $(GO) test -tags integration -count=1 -timeout 60m -v -run TestE2E_BurstExperimentAgainstItsPrediction ./e2e/

# Benchmarks: the pure decision cores, then the end-to-end ones on the real platform, printed
# as one table (hack/benchtable). docs/benchmarks.md gives the method and the figures.
.PHONY: bench
bench: tools
	$(GO) run ./hack/benchtable

.PHONY: lint
lint: $(WORKFLOWCHECK)
	@out=$$(gofmt -l .); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(WORKFLOWCHECK) ./workflows/...

# Re-record the workflow histories the replay tests replay (after a deliberate, versioned
# change to a workflow): real runs on the embedded Temporal server.
.PHONY: record-histories
record-histories:
	SLOTPLANE_RECORD=1 $(GO) test -tags integration -count=1 -run 'TestRecord(Job|Admission)?Histor(y|ies)' ./workflows/

.PHONY: generate
generate: $(CONTROLLER_GEN)
	rm -f crds/manifests/*.yaml
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt \
	  crd:generateEmbeddedObjectMeta=true output:crd:artifacts:config=crds/manifests \
	  $(foreach p,$(API_PACKAGES),paths=$(p))
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt \
	  crd:generateEmbeddedObjectMeta=true,maxDescLen=0 output:crd:artifacts:config=crds/manifests \
	  $(foreach p,$(OPERATOR_API_PACKAGES),paths=$(p))

.PHONY: clean
clean:
	rm -rf bin

.PHONY: tools
tools: $(KUBE_BIN)/.built $(TEMPORAL_BIN)/.built $(KWOK) $(CONTROLLER_GEN) $(WORKFLOWCHECK) chromium postgresql

# The dashboard's test drives Debian's chromium package headless. It comes from the system's
# apt sources: a Debian archive keeps only the current build of a package per release (older
# ones leave with each security update), so the release, not a build number, is the pin.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null || { \
	  echo ">> installing Debian's chromium package (for the dashboard test)"; \
	  $(SUDO) apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update >/dev/null && $(SUDO) apt-get install -y --no-install-recommends chromium >/dev/null; }; }

# The production-shaped Temporal of the tests keeps its data in Debian's PostgreSQL 15
# (internal/localplatform/temporalcluster runs its own server from the package's binaries); as
# for chromium, the release is the pin.
.PHONY: postgresql
postgresql:
	@test -x /usr/lib/postgresql/15/bin/postgres || { \
	  echo ">> installing Debian's postgresql-15 package (for the production-shaped Temporal tests)"; \
	  $(SUDO) apt-get install -y --no-install-recommends postgresql-15 >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update >/dev/null && $(SUDO) apt-get install -y --no-install-recommends postgresql-15 >/dev/null; }; }

.PHONY: temporal-tools
temporal-tools: $(TEMPORAL_BIN)/.built

$(KUBE_BIN)/.built:
	@echo ">> building kube-apiserver, kube-scheduler, etcd, kubectl ($(KUBE_VERSION)) into $(KUBE_BIN); the first time takes about 5 minutes"
	@rm -rf $(KUBE_BIN).tmp && mkdir -p $(KUBE_BIN).tmp
	cd tools/kube && $(GO) build -trimpath \
	  -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36" \
	  -o $(KUBE_BIN).tmp/ ./kube-apiserver ./kube-scheduler ./etcd ./kubectl
	@touch $(KUBE_BIN).tmp/.built && rm -rf $(KUBE_BIN) && mv $(KUBE_BIN).tmp $(KUBE_BIN)

# Built without -trimpath, as go test builds the project: the server's packages the embedded
# Temporal (internal/localplatform/temporalserver) compiled are then found in the Go build cache.
$(TEMPORAL_BIN)/.built:
	@echo ">> building temporal-server and temporal-sql-tool ($(TEMPORAL_VERSION)) into $(TEMPORAL_BIN); about 5 minutes on an empty Go build cache"
	@rm -rf $(TEMPORAL_BIN).tmp && mkdir -p $(TEMPORAL_BIN).tmp
	cd tools/temporal && $(GO) build -ldflags "-s -w" -o $(TEMPORAL_BIN).tmp/temporal-server go.temporal.io/server/cmd/server
	cd tools/temporal && $(GO) build -ldflags "-s -w" -o $(TEMPORAL_BIN).tmp/temporal-sql-tool go.temporal.io/server/cmd/tools/sql
	@touch $(TEMPORAL_BIN).tmp/.built && rm -rf $(TEMPORAL_BIN) && mv $(TEMPORAL_BIN).tmp $(TEMPORAL_BIN)

$(KWOK):
	@echo ">> building kwok $(KWOK_VERSION); the first time takes about 2 minutes"
	@rm -rf $(CACHE)/gobin.kwok && mkdir -p $(CACHE)/bin
	GOBIN=$(CACHE)/gobin.kwok $(GO) install -trimpath -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	@mv $(CACHE)/gobin.kwok/kwok $@ && rm -rf $(CACHE)/gobin.kwok

$(WORKFLOWCHECK):
	@echo ">> building workflowcheck $(WORKFLOWCHECK_VERSION)"
	@rm -rf $(CACHE)/gobin.wc && mkdir -p $(CACHE)/bin
	GOBIN=$(CACHE)/gobin.wc $(GO) install -trimpath go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)
	@mv $(CACHE)/gobin.wc/workflowcheck $@ && rm -rf $(CACHE)/gobin.wc

$(CONTROLLER_GEN):
	@echo ">> building controller-gen $(CONTROLLER_GEN_VERSION)"
	@rm -rf $(CACHE)/gobin.cg && mkdir -p $(CACHE)/bin
	GOBIN=$(CACHE)/gobin.cg $(GO) install -trimpath sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	@mv $(CACHE)/gobin.cg/controller-gen $@ && rm -rf $(CACHE)/gobin.cg
