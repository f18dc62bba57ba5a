package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/argoexec/argoexec/pkg/podspec"
)

// defaultTimeout bounds a run when --timeout is not given.
const defaultTimeout = 5 * time.Minute

// NewClientFunc connects to the cluster of a kubeconfig ("" means the
// default loading rules) and returns the client and the kubeconfig's
// namespace.
type NewClientFunc func(kubeconfig string) (kubernetes.Interface, string, error)

// RunOptions are the inputs of `run`: a render plus the cluster to run in.
type RunOptions struct {
	Render RenderOptions
	// Kubeconfig is the kubeconfig path; empty means $KUBECONFIG or ~/.kube/config.
	Kubeconfig string
	// Timeout bounds the whole run, from create to finish.
	Timeout time.Duration
	// Delete removes the pod once it has finished.
	Delete bool
	// LogTail is how many lines of each log to print on failure: the
	// failed container's (init, main, wait or a sidecar), main's and wait's.
	LogTail int64

	// NewClient connects to the cluster; tests replace it with a fake.
	NewClient NewClientFunc
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

func (o *RunOptions) addFlags(cmd *cobra.Command) {
	o.Render.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", defaultTimeout, "give up when the pod has not finished after this long")
	cmd.Flags().BoolVar(&o.Delete, "rm", false, "delete the pod once it has finished")
	cmd.Flags().Int64Var(&o.LogTail, "log-tail", 20, "lines of each log (the failed container's, main's, wait's) to print when the pod fails")
}

// Complete parses the render flags and fills in the cluster client and clock.
func (o *RunOptions) Complete() error {
	if o.NewClient == nil {
		o.NewClient = newClient
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o.Render.Complete()
}

// Validate checks the flags.
func (o *RunOptions) Validate() error {
	if o.Timeout <= 0 {
		return usageErrorf("--timeout %s: must be positive", o.Timeout)
	}
	if o.LogTail < 0 {
		return usageErrorf("--log-tail %d: must not be negative", o.LogTail)
	}
	return o.Render.Validate()
}

// Run renders the pod, creates it, watches it until it Succeeded or
// Failed, and prints the phase, the outputs, the timings and, on failure,
// the containers that failed with their messages and log tails.
func (o *RunOptions) Run(ctx context.Context, out io.Writer, log *logrus.Entry) error {
	if err := o.Render.load(log); err != nil {
		return err
	}
	client, ns, err := o.NewClient(o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("connect to cluster: %w", err)
	}
	if o.Render.Namespace == "" {
		o.Render.Namespace = ns
	}
	o.Render.resolveImageVolume(log, func() (bool, string) { return imageVolumeSupport(ctx, client) })
	pod, err := o.Render.build(podName(o.Render.Name, o.Render.template.Name))
	if err != nil {
		return err
	}
	log = log.WithField("pod", pod.Namespace+"/"+pod.Name)
	runCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res, err := o.runPod(runCtx, client, pod, log)
	if res != nil {
		printReport(out, res)
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		phase := corev1.PodPhase("")
		if res != nil {
			phase = res.pod.Status.Phase
		}
		return &TimeoutError{Pod: pod.Namespace + "/" + pod.Name, After: o.Timeout, Phase: phase}
	}
	if err != nil {
		return err
	}
	return o.finish(ctx, client, res, out, log)
}

// imageVolumeSupport says whether every node of the cluster can mount an
// image volume (podspec.ImageVolumeSupport); a node list that cannot be
// read is a no, saying why.
func imageVolumeSupport(ctx context.Context, client kubernetes.Interface) (bool, string) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Sprintf("could not list the nodes to see whether they mount image volumes (%v); grant list on nodes, or set emissaryImageVolume", err)
	}
	return podspec.ImageVolumeSupport(nodes.Items)
}

// podName is --name, else the template's name with a random suffix, so
// that runs of one template do not collide.
func podName(flagName, templateName string) string {
	if flagName != "" {
		return flagName
	}
	if templateName == "" {
		templateName = "step"
	}
	return templateName + "-" + utilrand.String(5)
}

// runPod creates the pod and watches it to the end.
func (o *RunOptions) runPod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, log *logrus.Entry) (*result, error) {
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod: %w", err)
	}
	res := &result{pod: created, created: o.Now(), executor: executorOf(created)}
	log.WithField("executor", res.executor).Info("pod created; watching it")
	return res, watchPod(ctx, client, res, o.Now, log)
}

// finish prints on failure the containers that failed (printFailure), deletes the pod if asked, and
// turns the phase into the command's error.
func (o *RunOptions) finish(ctx context.Context, client kubernetes.Interface, res *result, out io.Writer, log *logrus.Entry) error {
	pod := res.pod
	var err error
	if pod.Status.Phase == corev1.PodFailed {
		printFailure(ctx, client, pod, o.LogTail, out)
		err = &PodFailedError{Pod: pod.Namespace + "/" + pod.Name, Reason: failureReason(pod)}
	}
	if o.Delete {
		if derr := client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); derr != nil {
			log.WithError(derr).Warn("could not delete the pod")
		}
	}
	return err
}

func newClient(kubeconfig string) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("read kubeconfig namespace: %w", err)
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("load kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", fmt.Errorf("create client: %w", err)
	}
	return client, ns, nil
}

func newRunCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *RunOptions, IO, *logrus.Entry) error) *cobra.Command {
	o := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run --template FILE --configmap FILE [--label k=v ...] [--timeout 5m]",
		Short: "Create the pod of one workflow step, wait for it, print its outputs",
		Args:  cobra.NoArgs,
		RunE: runSteps(g, stdio, o.Complete, o.Validate, func(log *logrus.Entry) error {
			return runF(ctx, o, stdio, log)
		}),
	}
	o.addFlags(cmd)
	return cmd
}
