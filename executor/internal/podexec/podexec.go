// Package podexec is the exec engine that the exec-based backends (k8sapi and
// kubelet) share. It owns every operation whose logic does not depend on how
// a backend reaches the pod: reading a file and copying a path out (tar over
// exec), Wait (an exec session raced against the pod status), GetExitCode,
// ListContainerNames, Kill (signals sent from inside the containers), and the
// record of exits that exec saw before the status did.
//
// A backend supplies three small things: an Execer (how to run a command in a
// container), a PodSource (how to read and follow the pod's status: an API
// server watch, or the kubelet's /pods polled), and the error mapping inside
// them (which permission a 403 lacks). Every backend then has the same
// semantics and the same error messages.
//
// It also holds the transport both use to open exec sessions: client-go's
// remotecommand with SPDY first and WebSocket where SPDY is refused
// (RemoteExecer).
package podexec

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
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

// PodSource is where the engine reads the pod's spec and status: the API
// server (get and watch) or the kubelet (/pods).
type PodSource interface {
	// Get returns the pod as the source sees it now. Its errors say what
	// failed and what to do (a missing permission, a certificate).
	Get(ctx context.Context) (*corev1.Pod, error)
	// Follow calls fn, in order, with each version of the pod that the
	// source sees after from, until fn returns an error (Follow returns it),
	// ctx ends (an error wrapping ctx.Err()), the pod is deleted (an error
	// wrapping ErrPodGone) or the source fails for good. It never returns nil.
	Follow(ctx context.Context, from *corev1.Pod, opts FollowOptions, fn func(*corev1.Pod) error) error
}

// FollowOptions tune PodSource.Follow.
type FollowOptions struct {
	// Urgent says the change is expected soon (an exit exec has seen, a
	// kill under way) and the wait is short: a polling source keeps its
	// interval short instead of backing off to its longest.
	Urgent bool
}

// ErrPodGone is wrapped by errors for a pod deleted while it was followed.
var ErrPodGone = errors.New("pod was deleted")

// Defaults for Config's zero values.
const (
	// DefaultKillSettle is how long Kill waits, after sending SIGKILL to a
	// container's other processes, for the status to show the container
	// terminated before it reports PID 1 as a survivor. The kubelet reports
	// an exit 0.7-0.9 s after it happens, so this is that plus a small
	// margin; it keeps Kill of a TERM-ignoring container within grace +
	// about 1.5 s.
	DefaultKillSettle = time.Second
	// DefaultExitConfirmTimeout bounds how long GetExitCode waits for the
	// pod status to confirm an exit that Wait's exec fast path saw first.
	DefaultExitConfirmTimeout = 10 * time.Second
)

// Config is what a backend gives the engine. Zero values take the defaults
// noted on each field.
type Config struct {
	// Backend names the backend in error messages ("k8sapi", "kubelet").
	Backend string
	// Pod is "namespace/name", for error messages.
	Pod string
	// Exec runs commands in the pod's containers.
	Exec Execer
	// Source reads and follows the pod.
	Source PodSource
	// Log receives progress messages.
	Log *logrus.Entry
	// Clock times the engine's waits; nil means the real clock.
	Clock clock.Clock
	// KillSettle: 0 means DefaultKillSettle.
	KillSettle time.Duration
	// ExitConfirmTimeout: 0 means DefaultExitConfirmTimeout.
	ExitConfirmTimeout time.Duration
	// NoExecWait turns off Wait's exec fast path: Wait then learns of exits
	// from the status alone, 0.7-0.9 s later (for measurement, and for
	// images without sh).
	NoExecWait bool
}

// Engine runs the exec-based operations against the containers of one pod.
// Build it with New; it is safe for concurrent use.
type Engine struct {
	cfg Config
	// maxFileBytes is the GetFileContents limit: wf.MaxFileBytes.
	maxFileBytes int64

	mu sync.Mutex
	// exits records, by container name, the container ID of the instance
	// whose exec session died with it before the status said so. A
	// container restarted since (a native sidecar) has another ID.
	exits map[string]string
	// reports records, by container name, when the status first showed
	// an instance of it terminated (LogIncomplete).
	reports map[string]exitReport

	// endedByExec and endedByStatus count the Waits that returned because
	// the exec fast path, or the status, saw the last container exit.
	endedByExec, endedByStatus atomic.Int64
}

// New returns the engine for cfg, with its zero values defaulted.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.KillSettle == 0 {
		cfg.KillSettle = DefaultKillSettle
	}
	if cfg.ExitConfirmTimeout == 0 {
		cfg.ExitConfirmTimeout = DefaultExitConfirmTimeout
	}
	return &Engine{cfg: cfg, maxFileBytes: wf.MaxFileBytes, exits: map[string]string{}, reports: map[string]exitReport{}}
}

// sawExit reports whether exec saw this instance (id) of container exit.
func (e *Engine) sawExit(container, id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen, ok := e.exits[container]
	return ok && seen == id
}

// seenExit returns the container ID whose exit exec saw, if any.
func (e *Engine) seenExit(container string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id, ok := e.exits[container]
	return id, ok
}

// markExit records that exec saw instance id of container exit.
func (e *Engine) markExit(container, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exits[container] = id
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
