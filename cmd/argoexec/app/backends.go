package app

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/docker"
	"github.com/argoexec/argoexec/executor/k8sapi"
	"github.com/argoexec/argoexec/executor/kubelet"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// newBackend builds the backend the options name. This is the only place
// that imports backends.
func newBackend(_ context.Context, o *commonOptions, log *logrus.Entry) (executor.ContainerRuntimeExecutor, error) {
	b := o.Backend
	switch b.Executor {
	case wf.ExecutorK8sAPI:
		return k8sapi.New(k8sapi.Config{Kubeconfig: b.Kubeconfig, Namespace: o.Pod.Namespace, PodName: o.Pod.Name}, log)
	case wf.ExecutorKubelet:
		return kubelet.New(kubelet.Config{
			Host: b.KubeletHost, Port: b.KubeletPort, Insecure: b.KubeletInsecure, CAFile: b.KubeletCAFile,
			Namespace: o.Pod.Namespace, PodName: o.Pod.Name,
		}, log)
	case wf.ExecutorDocker:
		return docker.New(docker.Config{SockPath: b.DockerSockPath, Namespace: o.Pod.Namespace, PodName: o.Pod.Name, PodUID: o.Pod.UID}, log)
	}
	return nil, usageErrorf("%s=%q is not an executor", wf.EnvContainerRuntimeExecutor, b.Executor)
}
