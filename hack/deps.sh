#!/usr/bin/env bash
# Installs, from Debian's apt, the tools the build and the unit tier need and a
# fresh Debian machine may lack: make, git (whose `git http-backend` also serves
# the git artifact tests), gcc with libc headers (go test -race needs cgo), and
# dash and busybox (the shells Kill's commands are tested under). The cluster's own packages are installed by hack/cluster.sh.
set -euo pipefail
need=()
command -v make >/dev/null || need+=(make)
command -v git >/dev/null || need+=(git)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
# The podexec unit tests run Kill's shell commands under dash and busybox sh.
command -v dash >/dev/null || need+=(dash)
command -v busybox >/dev/null || need+=(busybox-static)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} (apt)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade "${need[@]}"
fi
