#!/usr/bin/env bash
# Prints the semantic version and the commit of the tree, one per line, for -ldflags -X
# (hack/build.sh; an image build passes them as build arguments):
#   version: the nearest tag v* (`git describe --tags --match 'v[0-9]*' --dirty`: v0.1.0 on the
#            tag, v0.1.0-3-gcf69768 after it, -dirty with local changes); without a tag, the
#            VERSION file as a pre-release of it: v0.1.0-dev.gcf69768 (.dirty); without git,
#            v$(cat VERSION)-dev.
#   commit:  `git rev-parse HEAD`, or "unknown" outside a git checkout.
# $VERSION and $COMMIT in the environment win.
set -euo pipefail
cd "$(dirname "$0")/.."
git_ok() { git rev-parse --git-dir >/dev/null 2>&1; }
version=${VERSION:-}
if [ -z "$version" ]; then
  if git_ok && version=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
    :
  else
    base=$(tr -d ' \n' < VERSION 2>/dev/null || echo 0.0.0)
    version=v${base#v}-dev
    if git_ok; then
      version=$version.g$(git rev-parse --short=7 HEAD)
      git diff --quiet HEAD 2>/dev/null || version=$version.dirty
    fi
  fi
fi
commit=${COMMIT:-}
if [ -z "$commit" ]; then
  commit=$(git_ok && git rev-parse HEAD 2>/dev/null || echo unknown)
fi
echo "$version"
echo "$commit"
