package app

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/executor/protocol"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// NamespaceFile is where the in-cluster namespace is mounted: the pod's
// namespace when ARGO_POD_NAMESPACE is not set (Argo's controller never sets it).
const NamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// BackendOptions are the settings of the container runtime executor that
// wait (and init, for the pod's own identity) uses. The backend's own
// settings come from its registration's FromEnv (see backends.go).
type BackendOptions struct {
	// Executor is the backend's name (ARGO_CONTAINER_RUNTIME_EXECUTOR).
	Executor string
	// Kubeconfig is a kubeconfig path for running outside a pod; empty means
	// in-cluster credentials.
	Kubeconfig string
	// construct builds the backend from the settings its FromEnv read;
	// set by validateBackend.
	construct backend.Constructor
}

// commonOptions are what init and wait both need.
type commonOptions struct {
	// cmdName is init or wait, for messages and scratch paths.
	cmdName string
	// namespaceFile is where the pod's namespace was looked for.
	namespaceFile string
	// getenv is the environment complete read, for the backend's FromEnv.
	getenv func(string) string
	// Protocol is the controller protocol the environment speaks, chosen
	// by detectProtocol.
	Protocol protocol.Protocol
	Pod      protocol.Pod
	Backend  BackendOptions
	// TemplatePath is the --template flag: a template file that wins over
	// what the protocol passes.
	TemplatePath string
	WorkflowName string
	// KillGrace is how long stopped containers get between SIGTERM and
	// SIGKILL (ARGO_TERMINATION_GRACE_PERIOD_SECONDS, the pod's
	// terminationGracePeriodSeconds); zero means the flow's default.
	KillGrace time.Duration
	// CPUProfile is the file to write a CPU profile of the run to
	// (EnvCPUProfile); empty means none.
	CPUProfile string
}

func (o *commonOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Backend.Kubeconfig, "kubeconfig", "", "kubeconfig to use instead of in-cluster credentials (for running outside a pod)")
	fs.StringVar(&o.Backend.Executor, "container-runtime-executor", "", "backend: "+strings.Join(registered().Names(), ", ")+" (default $"+wf.EnvContainerRuntimeExecutor+")")
	fs.StringVar(&o.TemplatePath, "template", "", "template JSON file (default $"+wf.EnvTemplatePath+", else "+wf.TemplateFile+")")
}

// complete fills what flags left empty from the environment. It only parses;
// validate judges.
func (o *commonOptions) complete(cmdName string, getenv func(string) string, namespaceFile string) error {
	proto, err := detectProtocol(cmdName, getenv, protocols())
	if err != nil {
		return err
	}
	o.Protocol = proto
	o.cmdName = cmdName
	o.namespaceFile = namespaceFile
	o.getenv = getenv
	o.Pod.Name = getenv(wf.EnvPodName)
	o.Pod.Namespace = getenv(wf.EnvPodNamespace)
	if o.Pod.Namespace == "" {
		if b, err := os.ReadFile(namespaceFile); namespaceFile != "" && err == nil {
			o.Pod.Namespace = strings.TrimSpace(string(b))
		}
	}
	o.Pod.UID = getenv(wf.EnvPodUID)
	if o.Backend.Executor == "" {
		o.Backend.Executor = getenv(wf.EnvContainerRuntimeExecutor)
	}
	if o.Backend.Executor == "" {
		o.Backend.Executor = wf.ExecutorK8sAPI
	}
	o.WorkflowName = getenv(wf.EnvWorkflowName)
	o.CPUProfile = getenv(EnvCPUProfile)
	if v := getenv(wf.EnvArgoTerminationGrace); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return usageErrorf("argoexec %s: %s=%q is not a number of seconds", cmdName, wf.EnvArgoTerminationGrace, v)
		}
		o.KillGrace = time.Duration(n) * time.Second
	}
	return nil
}

// validate says, for the first thing wrong, what is wrong and what to do.
func (o *commonOptions) validate(cmdName string) error {
	if o.Pod.Name == "" {
		return usageErrorf("argoexec %s must run inside a workflow pod: %s is not set", cmdName, wf.EnvPodName)
	}
	if o.Pod.Namespace == "" {
		return usageErrorf("argoexec %s must run inside a workflow pod: %s is not set and %s is not readable", cmdName, wf.EnvPodNamespace, o.namespaceFile)
	}
	if e := o.Backend.Executor; e == "pns" {
		return usageErrorf("argoexec %s: %s=%s: argoexec does not implement Argo's pns executor; set containerRuntimeExecutor to one of %s in workflow-controller-configmap, or select one per workflow with the label %s",
			cmdName, wf.EnvContainerRuntimeExecutor, e, strings.Join(registered().Names(), ", "), wf.LabelContainerRuntimeExecutor)
	}
	if _, err := o.registration(cmdName); err != nil {
		return err
	}
	return o.validateProtocol(cmdName)
}

// validateProtocol is the protocol's own check, as a usage error.
func (o *commonOptions) validateProtocol(cmdName string) error {
	if err := o.Protocol.Validate(cmdName); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// request is what the protocol is told for a flow of this command.
func (o *commonOptions) request(tmpl *wf.Template, restCfg *rest.Config, log *logrus.Entry) protocol.Request {
	return protocol.Request{Command: o.cmdName, Pod: o.Pod, WorkflowName: o.WorkflowName, Template: tmpl,
		RESTConfig: restCfg, KillGrace: o.KillGrace, Log: log}
}

// validateBackend reads and checks the settings of the backend wait uses,
// through its registration; init uses no backend.
func (o *commonOptions) validateBackend(cmdName string) error {
	reg, err := o.registration(cmdName)
	if err != nil {
		return err
	}
	construct, err := reg.FromEnv(backend.Env{
		Getenv: o.getenv, Namespace: o.Pod.Namespace, PodName: o.Pod.Name, PodUID: o.Pod.UID, Kubeconfig: o.Backend.Kubeconfig,
	})
	if err != nil {
		return usageErrorf("argoexec %s: %w", cmdName, err)
	}
	o.Backend.construct = construct
	return nil
}

// registration is the registered backend o names.
func (o *commonOptions) registration(cmdName string) (backend.Registration, error) {
	reg, ok := registered().Find(o.Backend.Executor)
	if !ok {
		return reg, usageErrorf("argoexec %s: %s=%q is not an executor (want %s)", cmdName, wf.EnvContainerRuntimeExecutor, o.Backend.Executor, strings.Join(registered().Names(), ", "))
	}
	return reg, nil
}

// String names the pod and backend, for messages.
func (o *commonOptions) String() string {
	return fmt.Sprintf("pod %s/%s executor %s protocol %s", o.Pod.Namespace, o.Pod.Name, o.Backend.Executor, o.Protocol.Name())
}
