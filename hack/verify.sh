#!/usr/bin/env bash
# Lint: gofmt must list no file, go.mod must be tidy, the Argo examples under testdata must be
# the module's (hack/update-argo-examples.sh --check), go vet and staticcheck must pass (with and
# without the e2e tag), and every shell script must be shellcheck-clean. staticcheck is pinned
# and installed from the Go module proxy into the cache; shellcheck comes from Debian's apt.
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK_VERSION=v0.8.2
CACHE=${ARGOEXEC_CACHE:-/var/cache/argoexec}

mapfile -t gofiles < <(git ls-files '*.go' | grep -v '^vendor/')
unformatted=$(gofmt -l "${gofiles[@]}" 2>&1 || true)
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
# pkg/apis/workflow's testdata/argo-examples: still Argo v3.3.8's examples/, byte for byte
hack/update-argo-examples.sh --check
# The three build tags: e2e (needs the testbed: test/e2e/..., hack/tools/argodemo), bench (the
# figures, test/e2e/*_bench_test.go and the files tagged `e2e && bench`, and argoexec's CPU
# profile), argoexec_main (the argoexec-main binary, hack/build.sh). -tags e2e alone catches an
# e2e test that leans on a helper only the bench files have.
go vet ./...
go vet -tags e2e ./...
go vet -tags e2e,bench ./...
go vet -tags argoexec_main ./cmd/argoexec/...

sc=$CACHE/bin/staticcheck-$STATICCHECK_VERSION
if [ ! -x "$sc" ]; then
  mkdir -p "$CACHE/bin"
  tmp=$(mktemp -d)
  GOBIN=$tmp go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
  mv "$tmp/staticcheck" "$sc"
  rmdir "$tmp"
fi
"$sc" ./...
"$sc" -tags e2e ./...
"$sc" -tags e2e,bench ./...
"$sc" -tags argoexec_main ./cmd/argoexec/...

if ! command -v shellcheck >/dev/null; then
  echo "installing shellcheck (apt)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade shellcheck
fi
mapfile -t scripts < <(git ls-files '*.sh' .ci/run)
shellcheck -x "${scripts[@]}"
echo "lint: gofmt, go mod tidy, go vet, staticcheck and shellcheck clean"
