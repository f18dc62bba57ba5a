#!/usr/bin/env bash
# Unit tier: fakes and httptest servers only; no cluster needed.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/deps.sh   # gcc: go test -race needs cgo
# pkg/apis/workflow decodes every template of Argo v3.3.8's examples/ from
# the module cache (and fails, never skips, when it is missing).
go mod download github.com/argoproj/argo-workflows/v3@v3.3.8
go test -race -short -count=1 ./...
# argoexec-main: the resource and data flows (build tag argoexec_main, see hack/build.sh)
go test -race -short -count=1 -tags argoexec_main ./cmd/argoexec/...
