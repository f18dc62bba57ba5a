//go:build e2e

package framework

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"
)

// Framework is one test's view of the testbed: clients and a namespace of its own.
type Framework struct {
	T         testing.TB
	Env       Env
	Config    *rest.Config
	Client    kubernetes.Interface
	Namespace string
}

// LabelE2E marks every namespace the e2e tier creates (to find leftovers).
const LabelE2E = "argoexec.e2e/test"

// DefaultTimeout bounds every wait in the framework unless the caller's context is shorter.
const DefaultTimeout = 2 * time.Minute

// RestConfig loads the admin kubeconfig named by the environment.
func RestConfig(env Env) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s (is the testbed up? hack/cluster.sh up): %w", env.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// Option adjusts the namespace New creates.
type Option func(*corev1.Namespace)

// PodSecurity labels the namespace pod-security.kubernetes.io/enforce=LEVEL
// (restricted, baseline or privileged; latest version): the API server's
// Pod Security admission then refuses every pod the level forbids.
func PodSecurity(level string) Option {
	return func(ns *corev1.Namespace) {
		ns.Labels[LabelPodSecurityEnforce] = level
		ns.Labels[LabelPodSecurityEnforce+"-version"] = "latest"
	}
}

// LabelPodSecurityEnforce is the namespace label of Pod Security admission's enforced level.
const LabelPodSecurityEnforce = "pod-security.kubernetes.io/enforce"

// New connects to the cluster and creates a namespace for the test, deleted when it ends,
// shaped by opts (none: unlabelled, which Pod Security admission treats as privileged).
// It fails the test (it does not skip) when the cluster cannot be reached.
func New(t testing.TB, opts ...Option) *Framework {
	t.Helper()
	env := LoadEnv()
	cfg, err := RestConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	f := &Framework{T: t, Env: env, Config: cfg, Client: client}
	f.Namespace = f.createNamespace(opts)
	return f
}

// Context returns a context bounded by DefaultTimeout and cancelled at the end of the test.
func (f *Framework) Context() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	f.T.Cleanup(cancel)
	return ctx
}

func randSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func dnsName(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, c := range s {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = strings.Trim(out[:40], "-")
	}
	return out
}

func (f *Framework) createNamespace(opts []Option) string {
	t := f.T
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	name := "e2e-" + dnsName(t.Name()) + "-" + randSuffix()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelE2E: "true"}}}
	for _, o := range opts {
		o(ns)
	}
	if _, err := f.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s (is the testbed up? hack/cluster.sh status): %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if t.Failed() {
			f.dumpNamespace(ctx, name)
		}
		zero := int64(0)
		// No kubelet runs DockerNodeName's pods, so none would confirm their deletion and the
		// namespace would stay Terminating for ever: remove them from the API at once.
		err := f.Client.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
			metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", DockerNodeName).String()})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting namespace %s's pods on %s: %v", name, DockerNodeName, err)
		}
		err = f.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting namespace %s: %v", name, err)
		}
	})
	// The ServiceAccount admission plugin refuses pods until the controller-manager has
	// created the namespace's "default" service account: wait for it (watch, bounded).
	sas := f.Client.CoreV1().ServiceAccounts(name)
	sel := fields.OneTermEqualSelector("metadata.name", "default").String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return sas.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return sas.Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.ServiceAccount{}, nil, func(ev watch.Event) (bool, error) {
		return ev.Type != watch.Deleted, nil
	})
	if err != nil {
		t.Fatalf("namespace %s: the default service account never appeared (is kube-controller-manager up?): %v", name, err)
	}
	return name
}

// CreatePod creates the pod in the test's namespace (namespace is filled in).
func (f *Framework) CreatePod(ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	f.T.Helper()
	pod = pod.DeepCopy()
	pod.Namespace = f.Namespace
	created, err := f.Client.CoreV1().Pods(f.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		f.T.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

// WaitForPod watches the pod until cond returns true or an error; it returns the last pod seen.
func (f *Framework) WaitForPod(ctx context.Context, name string, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	pods := f.Client.CoreV1().Pods(f.Namespace)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	var last *corev1.Pod
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("pod %s/%s was deleted", f.Namespace, name)
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		last = p
		return cond(p)
	})
	if err != nil {
		return last, fmt.Errorf("waiting for pod %s/%s: %w (last phase %s)", f.Namespace, name, err, phaseOf(last))
	}
	return last, nil
}

func phaseOf(p *corev1.Pod) string {
	if p == nil {
		return "unknown: never seen"
	}
	return string(p.Status.Phase)
}

// WaitForPodPhase waits (by watch) until the pod is in one of the phases. Reaching a terminal
// phase that is not wanted is an error at once.
func (f *Framework) WaitForPodPhase(ctx context.Context, name string, phases ...corev1.PodPhase) (*corev1.Pod, error) {
	return f.WaitForPod(ctx, name, func(p *corev1.Pod) (bool, error) {
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return true, nil
			}
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("pod reached %s, wanted %v: %s", p.Status.Phase, phases, DescribeStatuses(p))
		}
		return false, nil
	})
}

// DescribeStatuses summarises container states, for failure messages.
func DescribeStatuses(p *corev1.Pod) string {
	var b strings.Builder
	all := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range all {
		fmt.Fprintf(&b, "[%s ", cs.Name)
		switch {
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, "terminated exit=%d reason=%s msg=%q", cs.State.Terminated.ExitCode, cs.State.Terminated.Reason, cs.State.Terminated.Message)
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, "waiting reason=%s msg=%q", cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Running != nil:
			b.WriteString("running")
		}
		b.WriteString("] ")
	}
	if p.Status.Message != "" {
		fmt.Fprintf(&b, "message=%q", p.Status.Message)
	}
	return b.String()
}

// PodLogs returns a container's log.
func (f *Framework) PodLogs(ctx context.Context, pod, container string) (string, error) {
	rc, err := f.Client.CoreV1().Pods(f.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, rc)
	return buf.String(), err
}

// dumpNamespace logs pods, their statuses and events: called when a test failed.
func (f *Framework) dumpNamespace(ctx context.Context, ns string) {
	pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for i := range pods.Items {
			p := &pods.Items[i]
			f.T.Logf("pod %s/%s phase=%s node=%s %s", ns, p.Name, p.Status.Phase, p.Spec.NodeName, DescribeStatuses(p))
		}
	}
	evs, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range evs.Items {
			f.T.Logf("event %s %s/%s: %s: %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// SimplePod is a pod of one container from the busybox test image that runs the shell script.
func (f *Framework) SimplePod(name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr(int64(1)),
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           f.Env.BusyboxImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sh", "-c", script},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }
