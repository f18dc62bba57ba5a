package app

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/executor/backends"
)

// registered is the backends argoexec is built with (executor/backends,
// the one list, which only cmd/ imports).
func registered() backend.Set { return backends.All() }

// newBackend builds the backend whose settings validateBackend read.
// restCfg reaches the API server with wait's credentials.
func newBackend(_ context.Context, o *commonOptions, restCfg *rest.Config, log *logrus.Entry) (executor.ContainerRuntimeExecutor, error) {
	if o.Backend.construct == nil {
		return nil, errors.New("the backend's settings were not read: validate the options before running")
	}
	return o.Backend.construct(restCfg, log)
}
