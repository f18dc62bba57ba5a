package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/protocol"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// errWaitUnfinished is wait's termination message until it ends by itself:
// a wait that is SIGKILLed (the OOM killer, the pod's deadline, a node
// shutdown) writes nothing, and the controller would show only "Error (exit
// code 137)". Whatever wait returns then replaces it.
var errWaitUnfinished = errors.New("argoexec wait was stopped before it finished (SIGKILL, the OOM killer or a crash): " +
	"main's outputs were not all saved and reported; wait's log says how far it got")

// runWait is what `argoexec wait` does once its options are valid.
func runWait(ctx context.Context, o *WaitOptions) error {
	return untilFinished(o.TerminationLog, o.Log, func() error { return runWaitFlow(ctx, o) })
}

// untilFinished runs fn with errWaitUnfinished in the termination message at
// path, and empties it when fn succeeds (an error is written over it by Run).
func untilFinished(path string, log *logrus.Entry, fn func() error) error {
	if err := writeTerminationMessage(path, errWaitUnfinished); err != nil {
		log.WithError(err).Warn("could not write the termination message that says wait did not finish")
	}
	err := fn()
	if err == nil {
		if cerr := clearTerminationMessage(path); cerr != nil {
			log.WithError(cerr).Warn("could not clear the termination message")
		}
	}
	return err
}

func runWaitFlow(ctx context.Context, o *WaitOptions) error {
	defer startCPUProfile(o.CPUProfile, o.Log)()
	usage := startStepUsage(ctx, clock.RealClock{})
	defer usage.finish(o.Log)
	we, closeBackend, err := newWaitFlow(ctx, &o.commonOptions, o.Log)
	if err != nil {
		return err
	}
	defer closeBackend()
	return we.Wait(ctx)
}

// runInit is what `argoexec init` does once its options are valid.
func runInit(ctx context.Context, o *InitOptions) error {
	defer startCPUProfile(o.CPUProfile, o.Log)()
	usage := startStepUsage(ctx, clock.RealClock{})
	defer usage.finish(o.Log)
	we, tmpl, err := newInitFlow(&o.commonOptions, o.Log)
	if err != nil {
		return err
	}
	if reg, err := o.registration("init"); err == nil && reg.Stage != nil {
		if err := reg.Stage(tmpl); err != nil {
			return fmt.Errorf("stage the %s executor's files before main: %w", reg.Name(), err)
		}
		o.Log.WithField("executor", reg.Name()).Info("staged the executor's files for the wrapped containers")
	}
	return we.Init(ctx)
}

// flowParts are the protocol's parts of a flow: the template it passed and
// what it decides. restCfg is nil for init, which reports nothing. The
// protocol, chosen once by detectProtocol, is the only part that knows
// which controller built the pod.
func flowParts(o *commonOptions, restCfg *rest.Config, log *logrus.Entry) (protocol.FlowParts, error) {
	tmpl, err := o.Protocol.Template(o.TemplatePath)
	if err != nil {
		return protocol.FlowParts{}, err
	}
	return o.Protocol.Flow(o.request(tmpl, restCfg, log))
}

// newInitFlow assembles init's WorkflowExecutor (no backend, no reporter)
// and returns the template it runs.
func newInitFlow(o *commonOptions, log *logrus.Entry) (*flow.WorkflowExecutor, *wf.Template, error) {
	parts, err := flowParts(o, nil, log)
	if err != nil {
		return nil, nil, err
	}
	return flow.NewWorkflowExecutor(parts.Config, nil, parts.Store, nil, log), parts.Config.Template, nil
}

// newWaitFlow assembles wait's WorkflowExecutor over the backend the
// options name, with what releases the backend's connections once the flow
// is done.
func newWaitFlow(ctx context.Context, o *commonOptions, log *logrus.Entry) (*flow.WorkflowExecutor, func(), error) {
	none := func() {}
	restCfg, err := restConfig(o.Backend.Kubeconfig)
	if err != nil {
		return nil, none, err
	}
	parts, err := flowParts(o, restCfg, log)
	if err != nil {
		return nil, none, err
	}
	runtime, err := newBackend(ctx, o, restCfg, log)
	if err != nil {
		return nil, none, err
	}
	closeBackend := none
	if c, ok := runtime.(io.Closer); ok {
		closeBackend = func() {
			if err := c.Close(); err != nil {
				log.WithError(err).Debug("close the backend's connections")
			}
		}
	}
	return flow.NewWorkflowExecutor(parts.Config, runtime, parts.Store, parts.Reporter, log), closeBackend, nil
}

// restConfig returns in-cluster credentials, or kubeconfig's when set.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("load in-cluster credentials (run in a pod with a service account, or pass --kubeconfig): %w", err)
	}
	return cfg, nil
}
