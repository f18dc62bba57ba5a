// Package backends is the one list of the container runtime executors
// argoexec and argoexec-step are built with, one line per backend.
// Only cmd/ (and tests that build pods or load configurations as the
// binaries do) import it; a new backend is its own package plus one line
// here.
package backends

import (
	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/executor/docker"
	"github.com/argoexec/argoexec/executor/emissary"
	"github.com/argoexec/argoexec/executor/k8sapi"
	"github.com/argoexec/argoexec/executor/kubelet"
)

// All returns every registered backend.
func All() backend.Set {
	return backend.Set{
		docker.Backend(),
		emissary.Backend(),
		k8sapi.Backend(),
		kubelet.Backend(),
	}
}
