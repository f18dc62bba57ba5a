#!/usr/bin/env bash
# Installs, from Debian's apt, the tools the build and the unit tier need and a
# fresh Debian machine may lack: make, git (whose `git http-backend` also serves
# the git artifact tests), gcc with libc headers (go test -race needs cgo),
# dash and busybox (the shells Kill's commands are tested under), nginx-light (the WebDAV server
# the artifactory tests run) and openssh-server (the sshd the git-over-SSH tests run). The cluster's own packages are installed by hack/cluster.sh.
set -euo pipefail
need=()
command -v make >/dev/null || need+=(make)
command -v git >/dev/null || need+=(git)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
# The podexec unit tests run Kill's shell commands under dash and busybox sh.
command -v dash >/dev/null || need+=(dash)
command -v busybox >/dev/null || need+=(busybox-static)
# The artifactory tests PUT and GET through nginx's WebDAV module (built into Debian's nginx-light)
# with basic auth, on a random port of their own: only the binary is needed, so the service the
# package starts on port 80 (where systemd runs) is stopped and disabled below.
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
# The argo tier's git-over-SSH cases run sshd on a free port of the node's IP with a config, host
# key and user key of their own: only the binary is needed, so the system sshd the package starts
# on port 22 is stopped and disabled below, as nginx's is.
command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} (apt)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade "${need[@]}"
  if [[ " ${need[*]} " == *" nginx-light "* ]] && command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    systemctl disable --now nginx >/dev/null 2>&1 || true
  fi
  if [[ " ${need[*]} " == *" openssh-server "* ]] && command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
  fi
fi
# The gcs artifact tests run fsouza/fake-gcs-server (a GCS emulator), built from the Go module proxy
# and cached in /var/cache/argoexec/bin (hack/lib/build.sh; ~1.5 min cold, nothing when cached).
"$(dirname "$0")/lib/build.sh" fake-gcs-server
