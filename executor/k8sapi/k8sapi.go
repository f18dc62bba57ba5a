// Package k8sapi is the ContainerRuntimeExecutor that reaches the other
// containers of its pod through the Kubernetes API server, with the pod's
// own service-account credentials (or a kubeconfig, for tests and for
// running outside a pod).
//
// What it uses on the API server (manifests/overlays/k8sapi grants exactly
// this, in the pod's namespace):
//
//	pods       get, watch  status, exit codes, container names; Wait's watch
//	pods/log   get         GetOutputStream
//	pods/exec  create, get files (tar), Kill (sh's kill builtin), Wait's fast path;
//	                       create for SPDY; the WebSocket fallback (where a proxy
//	                       cannot carry SPDY) needs get and, on v1.37, create too
//
// Exec sessions use SPDY and fall back on WebSocket where SPDY is refused
// (podexec.NewStreamExecutor). A 403 becomes an error that names the verb and
// resource missing, the namespace, and the identity that lacks them.
package k8sapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/internal/podexec"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Defaults for Config's zero values.
const (
	// DefaultExitConfirmTimeout bounds how long GetExitCode waits for the pod
	// status to confirm an exit that Wait's exec fast path saw first.
	DefaultExitConfirmTimeout = 10 * time.Second
)

// Config says which pod the executor serves and how to reach the API server.
// Zero values take the defaults noted on each field.
type Config struct {
	// Kubeconfig is a kubeconfig file; empty means the in-cluster config (the
	// pod's service-account token, re-read as it rotates, and CA).
	Kubeconfig string
	// Namespace and PodName name the workflow pod (the caller's own).
	Namespace, PodName string
	// MaxFileBytes limits GetFileContents; 0 means podexec.DefaultMaxFileBytes.
	MaxFileBytes int64
	// ExitConfirmTimeout: 0 means DefaultExitConfirmTimeout.
	ExitConfirmTimeout time.Duration
	// KillSettle: 0 means podexec.DefaultKillSettle.
	KillSettle time.Duration
	// NoExecWait turns off Wait's exec fast path: Wait then learns of exits
	// from the pod watch alone, 0.7-0.9 s later (for measurement, and for
	// images without sh).
	NoExecWait bool
}

// Executor is the k8sapi backend, bound to one pod. Build it with New.
type Executor struct {
	cfg    Config
	log    *logrus.Entry
	client kubernetes.Interface
	pe     *podexec.Client

	// exited holds the containers whose exit Wait's fast path saw before
	// the pod status did; GetExitCode waits for the status to confirm them.
	mu     sync.Mutex
	exited map[string]bool

	// splitLogs is 0 until GetOutputStream learns whether the API server
	// can return stdout alone, then 1 (yes) or 2 (no).
	splitLogs atomic.Int32
}

var _ executor.ContainerRuntimeExecutor = (*Executor)(nil)

// New returns the k8sapi backend for the pod cfg names. It makes no request.
func New(cfg Config, log *logrus.Entry) (*Executor, error) {
	restCfg, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("k8sapi: load client config: %w", err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("k8sapi: create client: %w", err)
	}
	e := newExecutor(cfg, log, client, nil)
	e.pe.Exec = &podexec.RemoteExecer{Config: restCfg, URL: e.execURL}
	return e, nil
}

// newExecutor builds an Executor over client and ex (nil: set by the caller).
func newExecutor(cfg Config, log *logrus.Entry, client kubernetes.Interface, ex podexec.Execer) *Executor {
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = podexec.DefaultMaxFileBytes
	}
	if cfg.ExitConfirmTimeout == 0 {
		cfg.ExitConfirmTimeout = DefaultExitConfirmTimeout
	}
	e := &Executor{cfg: cfg, log: log, client: client, exited: map[string]bool{}}
	e.pe = &podexec.Client{
		Backend:    workflow.ExecutorK8sAPI,
		Pod:        e.podRef(),
		Exec:       ex,
		Status:     statusWatcher{e},
		Log:        log,
		KillSettle: cfg.KillSettle,
	}
	return e
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

func (e *Executor) podRef() string { return e.cfg.Namespace + "/" + e.cfg.PodName }

// execURL is the pods/exec URL for a request; the parameters are encoded by
// client-go's parameter codec (one command= per argument, escaped).
func (e *Executor) execURL(req podexec.ExecRequest) (*url.URL, error) {
	return e.client.CoreV1().RESTClient().Post().
		Namespace(e.cfg.Namespace).Resource("pods").Name(e.cfg.PodName).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: req.Container,
			Command:   req.Command,
			Stdin:     req.Stdin,
			Stdout:    req.Stdout,
			Stderr:    req.Stderr,
		}, scheme.ParameterCodec).URL(), nil
}

// apiError wraps an API error for op; a 403 also names the permission that
// is missing and who lacks it.
func (e *Executor) apiError(ctx context.Context, op, verb, resource string, err error) error {
	if apierrors.IsForbidden(err) || podexec.IsForbidden(err) {
		return fmt.Errorf("k8sapi: %s: %w; missing permission: %s needs %q on %q in namespace %s (manifests/overlays/k8sapi grants it)",
			op, err, e.whoAmI(ctx), verb, resource, e.cfg.Namespace)
	}
	return fmt.Errorf("k8sapi: %s: %w", op, err)
}

// execError adds the missing pods/exec permission to an exec error that is
// a 403; podexec has already said what failed and where.
func (e *Executor) execError(ctx context.Context, err error) error {
	if err == nil || !podexec.IsForbidden(err) {
		return err
	}
	return fmt.Errorf("%w; missing permission: %s needs \"create\" on \"pods/exec\" (and \"get\" as well for the WebSocket fallback) in namespace %s (manifests/overlays/k8sapi grants both)",
		err, e.whoAmI(ctx), e.cfg.Namespace)
}

// whoAmI names the identity the API server sees, asked only when a
// request was refused (a SelfSubjectReview, which every authenticated user
// may create).
func (e *Executor) whoAmI(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := e.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return "this executor's identity (the pod's service account)"
	}
	return r.Status.UserInfo.Username
}

// getPod reads the pod.
func (e *Executor) getPod(ctx context.Context) (*corev1.Pod, error) {
	pod, err := e.client.CoreV1().Pods(e.cfg.Namespace).Get(ctx, e.cfg.PodName, metav1.GetOptions{})
	if err != nil {
		return nil, e.apiError(ctx, "get pod "+e.podRef(), "get", "pods", err)
	}
	return pod, nil
}

// GetFileContents returns the file at path in the named container, read
// with `tar` over pods/exec (podexec.Client.GetFileContents: the tar header's
// size catches a session cut short); files over Config.MaxFileBytes (256 KiB
// by default, the whole annotation budget of the outputs) are an error.
func (e *Executor) GetFileContents(ctx context.Context, containerName, path string) (string, error) {
	s, err := e.pe.GetFileContents(ctx, containerName, path, e.cfg.MaxFileBytes)
	return s, e.execError(ctx, err)
}

// CopyFile copies srcPath from the named container into the local .tgz
// destPath: `tar -cf -` over pods/exec, streamed through the path-escape
// checks of archive.Repack and gzip at compressionLevel.
func (e *Executor) CopyFile(ctx context.Context, containerName, srcPath, destPath string, compressionLevel int) error {
	return e.execError(ctx, e.pe.CopyFile(ctx, containerName, srcPath, destPath, compressionLevel))
}

// GetOutputStream streams the named container's log from pods/log.
//
// pods/log serves the container's log as the kubelet stored it, stdout and
// stderr interleaved in the order they were written: that is "combined".
// Stdout alone (combined=false) needs the API server and kubelet feature gate
// PodLogsQuerySplitStreams (alpha and off by default up to Kubernetes 1.37);
// where it is off, combined=false is an error wrapping
// executor.ErrNotSupported, and the caller can ask for combined output or use
// the docker backend, which separates the streams.
func (e *Executor) GetOutputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error) {
	opts := &corev1.PodLogOptions{Container: containerName}
	if !combined {
		if e.splitLogs.Load() == 2 {
			return nil, errNoSplitLogs(containerName)
		}
		stdout := corev1.LogStreamStdout
		opts.Stream = &stdout
	}
	rc, err := e.client.CoreV1().Pods(e.cfg.Namespace).GetLogs(e.cfg.PodName, opts).Stream(ctx)
	if !combined {
		switch {
		case err == nil:
			e.splitLogs.Store(1)
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			// The field is refused where the gate is off.
			e.log.WithError(err).Debug("pods/log refused stream=Stdout")
			e.splitLogs.Store(2)
			return nil, errNoSplitLogs(containerName)
		}
	}
	if err != nil {
		return nil, e.apiError(ctx, fmt.Sprintf("stream log of container %q of pod %s", containerName, e.podRef()), "get", "pods/log", err)
	}
	return rc, nil
}

func errNoSplitLogs(container string) error {
	return executor.NotSupported(workflow.ExecutorK8sAPI, fmt.Sprintf("log of container %q without stderr", container),
		"pods/log interleaves stdout and stderr unless the PodLogsQuerySplitStreams feature gate is on; ask for combined output, or use the docker backend")
}

// GetExitCode returns the exit code of the named container from the pod's
// status. A container still running is an error that says so. If Wait's exec
// fast path saw the container exit before the status did, GetExitCode waits
// (up to Config.ExitConfirmTimeout) for the status to confirm it: the fast
// path never supplies the code.
func (e *Executor) GetExitCode(ctx context.Context, containerName string) (int, error) {
	pod, err := e.getPod(ctx)
	if err != nil {
		return 0, err
	}
	st, ok := containerStatus(pod, containerName)
	if !ok && !hasContainer(pod, containerName) {
		return 0, fmt.Errorf("k8sapi: exit code of container %q: pod %s has no such container (it has %v)", containerName, e.podRef(), containerNames(pod))
	}
	if st.State.Terminated == nil && e.sawExit(containerName) {
		e.log.WithField("container", containerName).Debug("exit seen by exec, waiting for the pod status to confirm it")
		cctx, cancel := context.WithTimeout(ctx, e.cfg.ExitConfirmTimeout)
		pod, err = e.watchUntil(cctx, []string{containerName}, pod)
		cancel()
		if err != nil && ctx.Err() != nil {
			return 0, err
		}
		if pod != nil {
			st, _ = containerStatus(pod, containerName)
		}
	}
	if t := st.State.Terminated; t != nil {
		return int(t.ExitCode), nil
	}
	return 0, fmt.Errorf("k8sapi: exit code of container %q of pod %s: the container has not terminated (%s)", containerName, e.podRef(), describeState(st.State))
}

// ListContainerNames lists the pod's containers from its spec: init
// containers (native sidecars among them) first, then the others.
func (e *Executor) ListContainerNames(ctx context.Context) ([]string, error) {
	pod, err := e.getPod(ctx)
	if err != nil {
		return nil, err
	}
	return containerNames(pod), nil
}

// Kill stops the named containers with signals sent through pods/exec: see
// podexec.Client.Kill. It refuses pods with shareProcessNamespace or hostPID,
// where PID 1 in a container is not the container's process.
func (e *Executor) Kill(ctx context.Context, containerNames []string, grace time.Duration) error {
	pod, err := e.getPod(ctx)
	if err != nil {
		return err
	}
	if err := podexec.CheckKillable(workflow.ExecutorK8sAPI, &pod.Spec); err != nil {
		return err
	}
	return e.execError(ctx, e.pe.Kill(ctx, containerNames, grace))
}

func (e *Executor) sawExit(container string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exited[container]
}

func (e *Executor) markExit(container string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exited[container] = true
}

// statusWatcher is podexec's view of the pod status.
type statusWatcher struct{ e *Executor }

// Running implements podexec.StatusWatcher with one GET.
func (s statusWatcher) Running(ctx context.Context, containers []string) ([]string, error) {
	pod, err := s.e.getPod(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range containers {
		if st, ok := containerStatus(pod, c); ok && st.State.Running != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// WaitTerminated implements podexec.StatusWatcher with the pod watch.
func (s statusWatcher) WaitTerminated(ctx context.Context, containers []string) error {
	_, err := s.e.watchUntil(ctx, containers, nil)
	return err
}

// errPodGone is wrapped by errors for a pod deleted while waiting on it.
var errPodGone = errors.New("pod was deleted")
