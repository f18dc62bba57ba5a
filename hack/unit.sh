#!/usr/bin/env bash
# Unit tier: fakes and httptest servers only; no cluster needed.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/deps.sh   # gcc: go test -race needs cgo
go test -race -short -count=1 ./...
