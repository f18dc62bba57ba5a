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
//	pods/exec  create      files (tar), Kill (sh's kill builtin), Wait's fast path,
//	                       over SPDY; the WebSocket fallback (where a proxy cannot
//	                       carry SPDY) needs get and, on v1.37, create too: add get
//	                       there (manifests/base/role.yaml does not grant it)
//
// Files, copies, Wait, GetExitCode, ListContainerNames and Kill are the
// shared exec engine's (executor/internal/podexec); this package gives it
// the pods/exec Execer, the pod watch (watch.go) and the mapping of a 403 to
// the permission that is missing. Exec sessions use SPDY and fall back on
// WebSocket where SPDY is refused. A 403 becomes an error that names the verb
// and resource missing, the namespace, and the identity that lacks them.
package k8sapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/internal/podexec"
	"github.com/argoexec/argoexec/executor/internal/stdoutlog"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/kubeclient"
)

// Config says which pod the executor serves and how to reach the API server.
// Zero values take the defaults noted on each field.
type Config struct {
	// Kubeconfig is a kubeconfig file; empty means the in-cluster config (the
	// pod's service-account token, re-read as it rotates, and CA).
	Kubeconfig string
	// Namespace and PodName name the workflow pod (the caller's own).
	Namespace, PodName string
	// ExitConfirmTimeout bounds how long GetExitCode waits for the status to
	// confirm an exit that Wait's exec fast path saw; 0 means
	// podexec.DefaultExitConfirmTimeout (10 s).
	ExitConfirmTimeout time.Duration
	// KillSettle: 0 means podexec.DefaultKillSettle (1 s).
	KillSettle time.Duration
	// NoExecWait turns off Wait's exec fast path: Wait then learns of exits
	// from the pod watch alone, 0.7-0.9 s later (for measurement, and for
	// images without sh).
	NoExecWait bool
}

// Executor is the k8sapi backend, bound to one pod. Build it with New. The
// methods of the shared exec engine (GetFileContents, CopyFile, Wait,
// GetExitCode, ListContainerNames, Kill, WaitPaths) run over pods/exec and
// the pod watch.
type Executor struct {
	*podexec.Engine
	cfg    Config
	log    *logrus.Entry
	client kubeclient.Interface
	// remote is the pods/exec transport; nil in unit tests.
	remote *podexec.RemoteExecer

	// stdout knows whether pods/log can give stdout alone.
	stdout stdoutlog.Probe
}

var _ executor.ContainerRuntimeExecutor = (*Executor)(nil)

// New returns the k8sapi backend for the pod cfg names. It makes no request.
func New(cfg Config, log *logrus.Entry) (*Executor, error) {
	restCfg, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("k8sapi: load client config: %w", err)
	}
	client, err := kubeclient.New(restCfg)
	if err != nil {
		return nil, fmt.Errorf("k8sapi: create client: %w", err)
	}
	e := &Executor{cfg: cfg, log: log, client: client}
	e.remote = &podexec.RemoteExecer{Config: restCfg, URL: e.execURL}
	e.Engine = e.newEngine(e.remote, clock.RealClock{})
	return e, nil
}

// newEngine builds the exec engine over ex, this pod's watch and clk.
func (e *Executor) newEngine(ex podexec.Execer, clk clock.Clock) *podexec.Engine {
	return podexec.New(podexec.Config{
		Backend:            workflow.ExecutorK8sAPI,
		Pod:                e.podRef(),
		Exec:               execer{e: e, next: ex},
		Source:             watchSource{e: e, clock: clk},
		Log:                e.log,
		Clock:              clk,
		KillSettle:         e.cfg.KillSettle,
		ExitConfirmTimeout: e.cfg.ExitConfirmTimeout,
		NoExecWait:         e.cfg.NoExecWait,
	})
}

// ExecSessions says how many exec sessions SPDY and WebSocket have carried
// (for tests that check which protocol a copy used).
func (e *Executor) ExecSessions() (spdy, websocket int) {
	if e.remote == nil {
		return 0, 0
	}
	return e.remote.Sessions()
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
	return e.client.RESTClient().Post().
		Namespace(e.cfg.Namespace).Resource("pods").Name(e.cfg.PodName).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: req.Container,
			Command:   req.Command,
			Stdin:     req.Stdin,
			Stdout:    req.Stdout,
			Stderr:    req.Stderr,
		}, e.client.ParameterCodec()).URL(), nil
}

// apiError wraps an API error for op; a 403 also names the permission that
// is missing and who lacks it. It adds no "k8sapi:" prefix: the method the
// caller called (the engine's, or GetOutputStream) adds it once.
func (e *Executor) apiError(ctx context.Context, op, verb, resource string, err error) error {
	if apierrors.IsForbidden(err) || podexec.IsForbidden(err) {
		return fmt.Errorf("%s: %w; missing permission: %s needs %q on %q in namespace %s (manifests/overlays/k8sapi grants it)",
			op, err, e.whoAmI(ctx), verb, resource, e.cfg.Namespace)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// execer adds the missing pods/exec permission to exec errors that are a
// 403; podexec says what failed and where.
type execer struct {
	e    *Executor
	next podexec.Execer
}

// Exec implements podexec.Execer.
func (x execer) Exec(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := x.next.Exec(ctx, container, cmd, stdin, stdout, stderr)
	if x.e.remote != nil && x.e.remote.FellBack() {
		x.e.log.Warnf("k8sapi: exec over SPDY was refused, so exec sessions go over WebSocket from now on "+
			"(measured here at half the bytes per second of SPDY); where nothing between this pod and the API server "+
			"refuses SPDY, %s lacks RBAC verb \"create\" on resource \"pods/exec\" in namespace %s: grant it, as manifests/overlays/k8sapi does",
			x.e.whoAmI(ctx), x.e.cfg.Namespace)
	}
	if err == nil || !podexec.IsForbidden(err) {
		return err
	}
	return fmt.Errorf("%w; missing permission: %s needs \"create\" on \"pods/exec\" in namespace %s (exec over SPDY; manifests/overlays/k8sapi grants it; where a proxy refuses SPDY, the WebSocket fallback needs \"get\" as well)",
		err, x.e.whoAmI(ctx), x.e.cfg.Namespace)
}

// whoAmI names the identity the API server sees, asked only when a
// request was refused (a SelfSubjectReview, which every authenticated user
// may create).
func (e *Executor) whoAmI(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	name, err := e.client.WhoAmI(ctx)
	if err != nil || name == "" {
		return "this executor's identity (the pod's service account)"
	}
	return name
}

// getPod reads the pod. The engine's error names the pod.
func (e *Executor) getPod(ctx context.Context) (*corev1.Pod, error) {
	pod, err := e.client.Pods(e.cfg.Namespace).Get(ctx, e.cfg.PodName, metav1.GetOptions{})
	if err != nil {
		return nil, e.apiError(ctx, "get pod", "get", "pods", err)
	}
	return pod, nil
}

// GetOutputStream streams the named container's log from pods/log.
//
// Combined, it is the log as the kubelet stored it, stdout and stderr
// interleaved in the order they were written. Without combined it asks for
// stdout alone (PodLogOptions.Stream "Stdout"), which needs the feature gate
// PodLogsQuerySplitStreams (alpha since Kubernetes 1.32, off by default up to
// 1.37) on the API server and on the kubelet. With the gate off on the API
// server, the server refuses the field (422, "stream: Forbidden: may not be
// specified"); with it on there but off on the kubelet, the kubelet refuses
// it (400, "Please enable PodLogsQuerySplitStreams feature gate in kubelet").
// An API server older than 1.32 ignores the field, which the first
// stdout-only request checks once (executor/internal/stdoutlog). Where
// stdout alone cannot be had, combined=false is an error wrapping
// executor.ErrNotSupported that names the gate; the caller can ask for
// combined output or use the docker backend, which separates the streams.
func (e *Executor) GetOutputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error) {
	op := fmt.Sprintf("stream log of container %q of pod %s", containerName, e.podRef())
	var (
		rc  io.ReadCloser
		err error
	)
	if combined {
		rc, err = e.logs(ctx, &corev1.PodLogOptions{Container: containerName})
	} else {
		rc, err = e.stdout.Open(ctx, stdoutlog.Request{
			Server: "API server",
			Log:    e.log,
			Open: func(ctx context.Context) (io.ReadCloser, error) {
				return e.logs(ctx, &corev1.PodLogOptions{Container: containerName, Stream: new(corev1.LogStreamStdout)})
			},
			OpenProbe: func(ctx context.Context) (io.ReadCloser, error) {
				return e.logs(ctx, &corev1.PodLogOptions{Container: containerName, Stream: new(stdoutlog.ProbeStream), LimitBytes: new(int64(1))})
			},
			Refused: func(err error) bool { return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) },
		})
	}
	switch {
	case errors.Is(err, stdoutlog.ErrUnsupported):
		return nil, errNoSplitLogs(containerName)
	case err != nil:
		return nil, fmt.Errorf("k8sapi: %w", e.apiError(ctx, op, "get", "pods/log", err))
	}
	return rc, nil
}

// logs opens the pods/log stream for opts.
func (e *Executor) logs(ctx context.Context, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return e.client.Pods(e.cfg.Namespace).GetLogs(e.cfg.PodName, opts).Stream(ctx)
}

func errNoSplitLogs(container string) error {
	return executor.NotSupported(workflow.ExecutorK8sAPI, fmt.Sprintf("log of container %q without stderr", container),
		"pods/log gives stdout alone only with the feature gate PodLogsQuerySplitStreams on the API server and the kubelet (Kubernetes 1.32 or later); enable it, ask for combined output, or use the docker backend")
}

// LogIncomplete says why the log of the named container, which has exited,
// may be missing the end of what it printed (the container runtime was down
// when it exited; the engine's LogIncomplete says how that is told), or ""
// when nothing says so. It asks pods/log for the last line with its
// timestamp only when the status showed the exit late.
func (e *Executor) LogIncomplete(ctx context.Context, containerName string) (string, error) {
	return e.Engine.LogIncomplete(ctx, containerName, e.lastLogLine)
}

// SettleLog waits until the log of the named container, which has exited,
// has stopped growing (the runtime copies output to it after the container
// prints it), and returns the timestamp of its last entry; the engine's
// SettleLog says how that is told; known is an end the caller saw settle.
func (e *Executor) SettleLog(ctx context.Context, containerName string, known time.Time) (time.Time, bool, error) {
	return e.Engine.SettleLog(ctx, containerName, e.lastLogLine, known)
}

// lastLogLine asks pods/log for the timestamp of the container's last log
// entry.
func (e *Executor) lastLogLine(ctx context.Context, c string) (time.Time, bool, error) {
	rc, err := e.logs(ctx, &corev1.PodLogOptions{Container: c, TailLines: new(int64(1)), Timestamps: true})
	if err != nil {
		return time.Time{}, false, e.apiError(ctx, "get the last line of the log", "get", "pods/log", err)
	}
	defer rc.Close()
	return podexec.LastLineTime(rc)
}
