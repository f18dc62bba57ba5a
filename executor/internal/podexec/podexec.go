// Package podexec holds the operations that the exec-based backends (k8sapi
// and kubelet) share: reading a file, copying a path out as a .tgz, stopping
// containers with signals, and the exec session that learns of main's exit.
// A backend supplies two small things, an Execer (how to run a command in a
// container) and a StatusWatcher (what the pod's status says), and gets the
// same semantics and the same error messages as every other exec backend.
//
// It also holds the transport both use to open exec sessions: client-go's
// remotecommand with SPDY first and WebSocket where SPDY is refused
// (NewStreamExecutor, RemoteExecer).
package podexec

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/argoexec/argoexec/executor"
)

// Execer runs cmd in the named container of the pod and streams its standard
// streams; a nil stdin, stdout or stderr is not opened at all. It returns when
// the command ends, the session breaks, or ctx ends (which closes the
// session). A command that ran and exited non-zero is an
// *executor.ExitCodeError (its Stderr may be empty: callers that want the
// tail of stderr capture it themselves).
type Execer interface {
	Exec(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// StatusWatcher is what Kill needs from the pod's status, as the backend
// sees it (API server watch, kubelet /pods).
type StatusWatcher interface {
	// Running returns those of containers that are running now. Containers
	// terminated, or not started, are left out.
	Running(ctx context.Context, containers []string) ([]string, error)
	// WaitTerminated blocks until every named container has terminated, or
	// ctx ends (then it returns an error wrapping ctx.Err()).
	WaitTerminated(ctx context.Context, containers []string) error
}

// DefaultKillSettle is how long Kill waits, after sending SIGKILL to a
// container's other processes, for the status to show the container
// terminated before it reports PID 1 as a survivor. The kubelet reports an
// exit 0.7-0.9 s after it happens, so this is that plus a small margin; it
// keeps Kill of a TERM-ignoring container within grace + about 1.5 s.
const DefaultKillSettle = time.Second

// DefaultMaxFileBytes is the GetFileContents limit a backend uses unless it
// documents another: the annotation that carries every output parameter
// holds 256 KiB at most, so a larger file could never be reported anyway.
const DefaultMaxFileBytes = 256 * 1024

// Client runs the shared exec-based operations against the containers of one
// pod. Its fields are set once by the backend's constructor.
type Client struct {
	// Backend names the backend in error messages ("k8sapi", "kubelet").
	Backend string
	// Pod is "namespace/name", for error messages.
	Pod string
	// Exec runs commands in the pod's containers.
	Exec Execer
	// Status reports on the pod's containers; only Kill uses it.
	Status StatusWatcher
	// Log receives progress messages.
	Log *logrus.Entry
	// KillSettle overrides DefaultKillSettle when non-zero.
	KillSettle time.Duration
}

// exitCode returns the exit code of err if it is an *executor.ExitCodeError.
func exitCode(err error) (int, bool) {
	var ee *executor.ExitCodeError
	if errors.As(err, &ee) {
		return ee.Code, true
	}
	return 0, false
}

// withStderr fills the Stderr of an *executor.ExitCodeError in err from
// the captured tail, if the Execer left it empty.
func withStderr(err error, tail *tailBuffer) error {
	var ee *executor.ExitCodeError
	if errors.As(err, &ee) && ee.Stderr == "" {
		ee.Stderr = tail.String()
	}
	return err
}

// tailBuffer keeps the last max bytes written to it; it is safe for
// concurrent use (the exec transport writes from its own goroutines).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func newTail() *tailBuffer { return &tailBuffer{max: 4096} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// String returns the captured tail with surrounding white space trimmed.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return trimSpace(string(t.b))
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ' || s[len(s)-1] == '\r' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	for len(s) > 0 && (s[0] == '\n' || s[0] == ' ') {
		s = s[1:]
	}
	return s
}
