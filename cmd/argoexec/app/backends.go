package app

import (
	"context"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/docker"
	"github.com/argoexec/argoexec/executor/k8sapi"
	"github.com/argoexec/argoexec/executor/kubelet"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/kubeclient"
)

// newBackend builds the backend the options name. This is the only place
// that imports backends. restCfg reaches the API server (nil when wait has
// no credentials): the docker backend reads the pod's status through it to
// cross-check the engine's wait.
func newBackend(_ context.Context, o *commonOptions, restCfg *rest.Config, log *logrus.Entry) (executor.ContainerRuntimeExecutor, error) {
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
		cfg := docker.Config{SockPath: b.DockerSockPath, Namespace: o.Pod.Namespace, PodName: o.Pod.Name, PodUID: o.Pod.UID}
		if restCfg != nil {
			client, err := kubeclient.New(restCfg)
			if err != nil {
				return nil, err
			}
			pods, name := client.Pods(o.Pod.Namespace), o.Pod.Name
			cfg.PodStatus = func(ctx context.Context) (*corev1.Pod, error) {
				return pods.Get(ctx, name, metav1.GetOptions{})
			}
		}
		return docker.New(cfg, log)
	}
	return nil, usageErrorf("%s=%q is not an executor", wf.EnvContainerRuntimeExecutor, b.Executor)
}
