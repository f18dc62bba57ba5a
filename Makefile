# Thin wrapper: the real work is in hack/*.sh. `make help` lists the targets.
SHELL := /bin/bash

.PHONY: help build image unit lint test test-matrix e2e e2e-faults demo images cluster-up cluster-down bench bench-unit bench-argo fuzz

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build static argoexec, argoexec-main and argoexec-step into bin/, version stamped (hack/version.sh)
	hack/build.sh

image: ## the Dockerfile's images for linux/amd64 and linux/arm64 as OCI image indexes in _output/image (argoexec.oci.tar, argoexec-argo.oci.tar; hack/image.sh): no registry needed
	hack/image.sh

lint: ## gofmt, go mod tidy, go vet, staticcheck, shellcheck (hack/verify.sh)
	hack/verify.sh

unit: ## unit tier: go test -race -short ./...
	hack/unit.sh

test: ## everything CI runs: lint, unit tier, fuzz (10 s each), the e2e tier and the fault suite on the real local cluster, the bench smoke
	hack/test.sh

test-matrix: ## the e2e tier on each Kubernetes x containerd cell (hours; holds the testbed alone), table into docs/compatibility.md (hack/test-matrix.sh)
	hack/test-matrix.sh

e2e: ## bring up the local cluster, build and import images, run the e2e tier
	hack/e2e.sh

e2e-faults: ## the fault suite: stop, kill or pause one testbed component mid-wait (holds the testbed alone)
	hack/e2e-faults.sh

demo: ## bring up the local cluster and run examples/ through every backend
	hack/demo.sh

images: ## the testbed's images (argoexec:dev from the Dockerfile, by dockerd), imported into containerd and dockerd
	hack/images.sh

fuzz: ## every Go fuzz target for FUZZTIME each (default 60s), then a table of executions per second
	hack/fuzz.sh

bench: ## the side-by-side report against Argo's argoexec: rewrites BENCHMARKS.md's generated block and docs/bench/*.svg (hack/bench.sh)
	hack/bench.sh

bench-unit: ## go benchmarks of the unit tier
	go test -run '^$$' -bench . -benchmem ./...

bench-argo: ## Argo v3.3.8 figures (BENCHMARKS.md): anchor step, 7 runs per executor image and backend (build tags e2e,bench)
	ARGOEXEC_E2E_TAGS=e2e,bench ARGOEXEC_E2E_ARGO_BENCH=$${ARGOEXEC_E2E_ARGO_BENCH:-7} hack/e2e.sh -run 'TestArgoFigures$$'

cluster-up: ## start the local cluster (idempotent)
	hack/cluster.sh up

cluster-down: ## stop the local cluster, leaving no process, mount or netns behind
	hack/cluster.sh down
