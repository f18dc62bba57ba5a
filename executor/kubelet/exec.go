package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// execer runs commands in the pod's containers through the kubelet's
// /exec/{namespace}/{pod}/{container} endpoint.
type execer struct {
	e *Executor
}

// execURL is the kubelet exec URL for cmd in container. Each argument is one
// command= parameter, escaped by url.Values. input=1 is set only when the
// caller streams stdin: the kubelet waits for every stream the query names,
// and a stdin stream the client never opens would hold the session until the
// kubelet's stream-creation timeout.
func (x *execer) execURL(container string, cmd []string, stdin bool) *url.URL {
	q := url.Values{}
	for _, c := range cmd {
		q.Add("command", c)
	}
	q.Set("output", "1")
	q.Set("error", "1")
	if stdin {
		q.Set("input", "1")
	}
	u, _ := url.Parse(x.e.cfg.baseURL()) // baseURL is built from a validated host and port
	u.Path = "/exec/" + x.e.cfg.Namespace + "/" + x.e.cfg.PodName + "/" + container
	u.RawQuery = q.Encode()
	return u
}

// errExecPending is returned by the exec-based operations until they are
// wired to the shared exec code in executor/internal/podexec.
var errExecPending = errors.New("exec through the kubelet is not wired yet")

// GetFileContents returns the contents of the file at path in the named
// container, read with tar over the kubelet's /exec.
func (e *Executor) GetFileContents(ctx context.Context, containerName, path string) (string, error) {
	return "", fmt.Errorf("kubelet: read %s in container %q: %w", path, containerName, errExecPending)
}

// CopyFile copies srcPath in the named container into the local .tgz
// destPath with tar streamed over the kubelet's /exec.
func (e *Executor) CopyFile(ctx context.Context, containerName, srcPath, destPath string, compressionLevel int) error {
	return fmt.Errorf("kubelet: copy %s from container %q: %w", srcPath, containerName, errExecPending)
}

// Kill stops the named containers with signals sent through the kubelet's
// /exec.
func (e *Executor) Kill(ctx context.Context, containerNames []string, grace time.Duration) error {
	return fmt.Errorf("kubelet: kill containers %v: %w", containerNames, errExecPending)
}
