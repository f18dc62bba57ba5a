#!/usr/bin/env bash
# Lint: gofmt must list no file, go vet must pass (with and without the e2e tag).
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^vendor/') 2>&1 || true)
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting (run gofmt -w):" >&2
  echo "$unformatted" >&2
  exit 1
fi
if ! go mod tidy -diff >/dev/null; then
  echo "go.mod/go.sum are not tidy: run go mod tidy" >&2
  go mod tidy -diff >&2 || true
  exit 1
fi
go vet ./...
go vet -tags e2e ./...
echo "lint: gofmt, go mod tidy and go vet clean"
