#!/usr/bin/env bash
# Unit tier: fakes and httptest servers only; no cluster needed.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/deps.sh   # gcc: go test -race needs cgo
go test -race -short -count=1 ./...
# argoexec-main: the resource and data flows (build tag argoexec_main, see hack/build.sh)
go test -race -short -count=1 -tags argoexec_main ./cmd/argoexec/...
