package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/argoexec/argoexec/executor/internal/podexec"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// execURL is the kubelet exec URL for req:
// /exec/{namespace}/{pod}/{container}?command=...&output=1&error=1[&input=1].
// Each argument is one command= parameter, escaped by url.Values. A stream
// is named only when the caller opens it: the kubelet waits for every stream
// the query names, and one the client never opens would hold the session
// until the kubelet's stream-creation timeout.
func (e *Executor) execURL(req podexec.ExecRequest) (*url.URL, error) {
	u, err := url.Parse(e.cfg.baseURL())
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, c := range req.Command {
		q.Add("command", c)
	}
	for param, on := range map[string]bool{"input": req.Stdin, "output": req.Stdout, "error": req.Stderr} {
		if on {
			q.Set(param, "1")
		}
	}
	u.Path = "/exec/" + e.cfg.Namespace + "/" + e.cfg.PodName + "/" + req.Container
	u.RawQuery = q.Encode()
	return u, nil
}

// kubeletExecer runs commands through the kubelet's /exec (podexec's
// RemoteExecer: SPDY first, WebSocket where SPDY is refused) and turns
// refusals and certificate failures into errors that say what to fix.
type kubeletExecer struct {
	e      *Executor
	remote *podexec.RemoteExecer
}

// Exec implements podexec.Execer.
func (x *kubeletExecer) Exec(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	// client-go's SPDY path flattens transport errors to text; the round
	// tripper leaves a certificate failure here so errors.As still finds it.
	ctx, failure := withTLSFailure(ctx)
	err := x.remote.Exec(ctx, container, cmd, stdin, stdout, stderr)
	if te := failure.get(); te != nil && err != nil {
		return te
	}
	return x.e.mapExecError(err)
}

// mapExecError explains an exec that the kubelet refused; other errors (an
// exit code, a cancelled ctx, a TLSError) pass through.
func (e *Executor) mapExecError(err error) error {
	if err == nil {
		return nil
	}
	code := execStatus(err)
	if code != http.StatusUnauthorized && code != http.StatusForbidden {
		return err
	}
	// Exec over SPDY (POST) needs nodes/proxy create; the WebSocket
	// fallback (GET) needs only get, so a refusal of both means get is missing.
	se := e.newStatusError(code, "", nil, "get")
	se.Body = truncate(err.Error(), maxErrorBodyShow)
	if code == http.StatusForbidden {
		se.Hint += "; exec over SPDY, the faster, needs verb \"create\" too"
	}
	se.Err = err
	return se
}

// execStatus returns the HTTP status with which the kubelet refused an exec
// upgrade, or 0.
func execStatus(err error) int {
	// client-go's UpgradeFailureError has no Unwrap: look into its Cause.
	var uf *httpstream.UpgradeFailureError
	if errors.As(err, &uf) {
		err = uf.Cause
	}
	var refused *podexec.UpgradeRefusedError
	if errors.As(err, &refused) {
		return refused.StatusCode
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code)
	}
	if podexec.IsForbidden(err) {
		return http.StatusForbidden
	}
	return 0
}

// newPodexec builds the shared exec operations over the kubelet.
func (e *Executor) newPodexec() *podexec.Client {
	return &podexec.Client{
		Backend: workflow.ExecutorKubelet,
		Pod:     e.cfg.Namespace + "/" + e.cfg.PodName,
		Exec: &kubeletExecer{e: e, remote: &podexec.RemoteExecer{
			Config: e.rest,
			URL:    e.execURL,
		}},
		Status: statusWatcher{e},
		Log:    e.log,
	}
}

// statusWatcher answers podexec.Kill's questions from the kubelet's /pods
// and, like Wait, an exec watch, so that Kill learns of a container stopping
// on SIGTERM without the kubelet's 0.7–0.9 s status lag.
//
// The exec watch is sound here because podexec.Kill's steps are sequential:
// Kill's SIGKILL to "every process but PID 1" would also kill a watch's
// shell (and look like the container dying), but the watch of the
// grace-period wait has been closed before that signal is sent, and the
// watch of the settle wait is started after it has been sent.
type statusWatcher struct{ e *Executor }

// Running implements podexec.StatusWatcher.
func (s statusWatcher) Running(ctx context.Context, containers []string) ([]string, error) {
	pod, err := s.e.getPod(ctx)
	if err != nil {
		return nil, err
	}
	var running []string
	for _, name := range containers {
		st, ok := containerStatus(pod, name)
		if !ok {
			return nil, fmt.Errorf("no container %q in pod %s/%s (containers: %v)", name, pod.Namespace, pod.Name, containerNames(pod))
		}
		if st.State.Running != nil && !s.e.sawExit(name, st.ContainerID) {
			running = append(running, name)
		}
	}
	return running, nil
}

// killPollMax bounds the /pods interval while Kill waits for containers to
// stop where the exec watch cannot run: a grace period is short, and every
// poll interval of slack is added to Kill's time.
const killPollMax = 200 * time.Millisecond

// WaitTerminated implements podexec.StatusWatcher.
func (s statusWatcher) WaitTerminated(ctx context.Context, containers []string) error {
	return s.e.wait(ctx, containers, waitOptions{watch: true, pollMax: min(killPollMax, s.e.cfg.PollMax)})
}

// GetFileContents returns the contents of the file at path in the named
// container, read with `cat` over the kubelet's /exec; files over 256 KiB
// (the annotation budget for every output parameter) are refused.
func (e *Executor) GetFileContents(ctx context.Context, containerName, path string) (string, error) {
	return e.pe.GetFileContents(ctx, containerName, path, podexec.DefaultMaxFileBytes)
}

// CopyFile copies srcPath in the named container into the local .tgz
// destPath: `tar` in the container, streamed over the kubelet's /exec
// (SPDY: the API server is not in the data path), checked entry by entry
// and compressed locally at compressionLevel.
func (e *Executor) CopyFile(ctx context.Context, containerName, srcPath, destPath string, compressionLevel int) error {
	return e.pe.CopyFile(ctx, containerName, srcPath, destPath, compressionLevel)
}

// Kill stops the named containers with signals sent through the kubelet's
// /exec: SIGTERM to PID 1, grace, then SIGKILL to every other process. A PID
// 1 that ignores SIGTERM cannot be forced from inside its PID namespace: that
// is an error wrapping executor.ErrPID1Survived naming the container. Pods
// with shareProcessNamespace or hostPID are refused (PID 1 is not the
// container's process there).
func (e *Executor) Kill(ctx context.Context, containerNames []string, grace time.Duration) error {
	pod, err := e.getPod(ctx)
	if err != nil {
		return fmt.Errorf("kubelet: kill containers %v: %w", containerNames, err)
	}
	if err := podexec.CheckKillable(workflow.ExecutorKubelet, &pod.Spec); err != nil {
		return err
	}
	return e.pe.Kill(ctx, containerNames, grace)
}
