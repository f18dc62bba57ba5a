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
go vet ./...
go vet -tags e2e ./...
echo "lint: gofmt and go vet clean"
