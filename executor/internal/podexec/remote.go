package podexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	//lint:ignore SA1019 client-go's SPDY upgrader (transport/spdy.Upgrader) still takes apimachinery's Connection type
	compathttpstream "k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"
	streamspdy "k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/argoexec/argoexec/executor"
)

// ExecRequest is what an exec URL must say: the container, the command, and
// which of the standard streams the session opens (named fields, so they
// cannot be swapped).
type ExecRequest struct {
	Container string
	Command   []string
	Stdin     bool
	Stdout    bool
	Stderr    bool
}

// RemoteExecer is an Execer over client-go's remotecommand: the API server's
// pods/exec or the kubelet's /exec, whichever URL builds.
type RemoteExecer struct {
	// Config holds the credentials and TLS settings for the exec endpoint.
	Config *rest.Config
	// URL returns the exec URL for a request.
	URL func(req ExecRequest) (*url.URL, error)
	// PingPeriod is how often a SPDY session without stdout pings the
	// server; 0 means 5 s, client-go's period. Sessions with stdout send no
	// pings (see pingPeriod).
	PingPeriod time.Duration

	stats protocolStats
}

// protocolStats is what the sessions of one RemoteExecer went over.
type protocolStats struct {
	// refused is set once SPDY was refused and WebSocket carried the
	// session: later sessions go straight to WebSocket instead of paying a
	// refused upgrade each (behind a proxy that cannot carry SPDY).
	refused atomic.Bool
	// spdy and ws count the sessions each protocol carried (upgraded).
	spdy, ws atomic.Int64
	// told is set once FellBack has reported the fall back.
	told atomic.Bool
}

// FellBack reports, on the first call after SPDY was refused and WebSocket
// carried a session, true, and false ever after: the backend then says once
// which grant would give SPDY back (a refused SPDY upgrade is most often a
// missing RBAC verb: create, where WebSocket needs get).
func (r *RemoteExecer) FellBack() bool {
	return r.stats.refused.Load() && !r.stats.told.Swap(true)
}

// Sessions says how many exec sessions SPDY and WebSocket have carried, so
// that tests can check a copy went over the protocol they meant.
func (r *RemoteExecer) Sessions() (spdy, websocket int) {
	return int(r.stats.spdy.Load()), int(r.stats.ws.Load())
}

// Exec implements Execer. The session uses SPDY and falls back on WebSocket
// when the SPDY upgrade is refused (and, once that has happened, goes
// to WebSocket directly). A non-zero exit
// becomes an *executor.ExitCodeError.
func (r *RemoteExecer) Exec(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	u, err := r.URL(ExecRequest{Container: container, Command: cmd, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil})
	if err != nil {
		return fmt.Errorf("build exec URL: %w", err)
	}
	ex, err := newStreamExecutor(r.Config, u, &r.stats, r.pingPeriod(stdout))
	if err != nil {
		return err
	}
	err = ex.StreamWithContext(quietClosedConn(ctx), remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) && exitErr.Exited() {
		return &executor.ExitCodeError{Container: container, Command: strings.Join(cmd, " "), Code: exitErr.ExitStatus()}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// quietClosedConn returns ctx with a klog logger (client-go's remotecommand
// logs through the context's) that turns the errors its stream-copying
// goroutines report on a closed connection into a V(4) message: when a
// session ends (its container died, as Kill makes it, or ctx ended) the
// copies still running fail with "use of closed network connection", which
// client-go otherwise logs as an UnhandledError although the session's own
// result is returned. Every other error is logged as before.
func quietClosedConn(ctx context.Context) context.Context {
	base := klog.FromContext(ctx)
	if base.GetSink() == nil {
		return ctx
	}
	return klog.NewContext(ctx, logr.New(closedConnSink{LogSink: base.GetSink(), base: base}))
}

// closedConnSink is quietClosedConn's logger.
type closedConnSink struct {
	logr.LogSink
	base logr.Logger
}

// Init implements logr.LogSink. The wrapped sink was initialised by the
// logger it came from and is shared: initialising it again would race with
// the sessions using it.
func (closedConnSink) Init(logr.RuntimeInfo) {}

// Error implements logr.LogSink.
func (s closedConnSink) Error(err error, msg string, kv ...any) {
	// The text too: some layers of the stream flatten the error.
	if err != nil && (errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "use of closed network connection")) {
		s.base.V(4).Info(msg+" (the exec session's connection closed as the session ended)", append([]any{"err", err}, kv...)...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

// WithValues implements logr.LogSink, keeping the filter.
func (s closedConnSink) WithValues(kv ...any) logr.LogSink {
	return closedConnSink{LogSink: s.LogSink.WithValues(kv...), base: s.base.WithValues(kv...)}
}

// WithName implements logr.LogSink, keeping the filter.
func (s closedConnSink) WithName(name string) logr.LogSink {
	return closedConnSink{LogSink: s.LogSink.WithName(name), base: s.base.WithName(name)}
}

// newStreamExecutor returns a remotecommand executor for the exec URL u that
// tries SPDY first and falls back on WebSocket when the SPDY upgrade is
// refused or a proxy cannot carry it, as remotecommand.NewFallbackExecutor
// does with the protocols the other way round. SPDY comes first because it
// was measured here to move twice the bytes per second of WebSocket for a
// quarter of the kubelet's CPU; WebSocket is there because some servers and
// RBAC set-ups only allow it (the kubelet's WebSocket exec needs only
// nodes/proxy get). When both are refused the error carries both refusals.
// It records in stats which protocol carried the session, and that SPDY
// was refused and WebSocket worked, after which it skips SPDY. A refusal
// that says the container is not running (containerNotRunning) is the
// server's answer, not the protocol's, and is not tried again over WebSocket.
func newStreamExecutor(cfg *rest.Config, u *url.URL, stats *protocolStats, ping time.Duration) (remotecommand.Executor, error) {
	transport, upgrader, err := spdyRoundTripper(cfg, ping)
	if err != nil {
		return nil, fmt.Errorf("set up SPDY transport: %w", err)
	}
	spdyExec, err := remotecommand.NewSPDYExecutorForTransports(transport, refusalMarker{upgrader}, http.MethodPost, u)
	if err != nil {
		return nil, fmt.Errorf("set up SPDY exec: %w", err)
	}
	wsExec, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u.String())
	if err != nil {
		return nil, fmt.Errorf("set up WebSocket exec: %w", err)
	}
	return &spdyFirst{spdy: spdyExec, ws: wsExec, stats: stats}, nil
}

// spdyPingPeriod is how often a SPDY session without stdout pings the server
// unless PingPeriod says otherwise (client-go's own period): it keeps a long,
// quiet session (waiting for a container's exit) open through proxies that
// close idle connections.
const spdyPingPeriod = 5 * time.Second

// pingPeriod is the SPDY ping period of a session: none for a session that
// carries stdout (a file or an archive coming out of the container), the
// default for the others. A ping that reaches containerd 1.6's CRI streaming
// server while it closes a finished session ends the connection before the
// client has read the last of stdout: the session then ends with no exit
// status, which client-go reports as success, and the copy is cut short by
// the megabyte or so still in flight. Measured on the testbed (issue 13,
// figure 6): 20 concurrent 64 MiB copies straight to containerd's streaming
// server lost their tail in 5 of 40 sessions with a 1 s ping and 0 of 60
// without; with client-go's 5 s ping only sessions longer than 5 s were cut.
// A stdout session is never quiet while it runs, so it needs no ping.
func (r *RemoteExecer) pingPeriod(stdout io.Writer) time.Duration {
	switch {
	case stdout != nil:
		return 0
	case r.PingPeriod > 0:
		return r.PingPeriod
	}
	return spdyPingPeriod
}

// spdyRoundTripper is client-go's spdy.RoundTripperFor with the ping period
// given (0: no pings) instead of its fixed 5 s.
func spdyRoundTripper(cfg *rest.Config, ping time.Duration) (http.RoundTripper, spdy.Upgrader, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	proxy := http.ProxyFromEnvironment
	if cfg.Proxy != nil {
		proxy = cfg.Proxy
	}
	rt, err := streamspdy.NewRoundTripperWithConfig(streamspdy.RoundTripperConfig{TLS: tlsConfig, Proxier: proxy, PingPeriod: ping})
	if err != nil {
		return nil, nil, err
	}
	wrapper, err := rest.HTTPWrappersForConfig(cfg, rt)
	if err != nil {
		return nil, nil, err
	}
	return wrapper, spdy.NewUpgraderForStreaming(rt), nil
}

// spdyFirst streams over SPDY and, when the upgrade is refused, over
// WebSocket. With stats.refused set, it goes to WebSocket directly.
type spdyFirst struct {
	spdy, ws remotecommand.Executor
	stats    *protocolStats
}

// Stream implements remotecommand.Executor; use StreamWithContext.
func (f *spdyFirst) Stream(options remotecommand.StreamOptions) error {
	return f.StreamWithContext(context.Background(), options)
}

// StreamWithContext implements remotecommand.Executor.
func (f *spdyFirst) StreamWithContext(ctx context.Context, options remotecommand.StreamOptions) error {
	refusal := func(err error) bool {
		return err != nil && (httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err))
	}
	ws := func() error {
		err := f.ws.StreamWithContext(ctx, options)
		if !refusal(err) {
			f.stats.ws.Add(1)
		}
		return err
	}
	if f.stats.refused.Load() {
		return ws()
	}
	err := f.spdy.StreamWithContext(ctx, options)
	if containerNotRunning(err) {
		// The server answered: WebSocket would get the same answer.
		return err
	}
	if !refusal(err) {
		f.stats.spdy.Add(1)
		return err
	}
	wsErr := ws()
	if refusal(wsErr) {
		return fmt.Errorf("SPDY: %w; WebSocket: %w", err, wsErr)
	}
	f.stats.refused.Store(true) // WebSocket was upgraded: use it from now on
	return wsErr
}

// UpgradeRefusedError is the cause of a refused SPDY upgrade: the server
// answered with StatusCode instead of 101 Switching Protocols.
type UpgradeRefusedError struct {
	StatusCode int
	Err        error
}

// Error implements error.
func (e *UpgradeRefusedError) Error() string {
	return fmt.Sprintf("HTTP %d: %v", e.StatusCode, e.Err)
}

// Unwrap returns the upgrader's own error.
func (e *UpgradeRefusedError) Unwrap() error { return e.Err }

// refusalMarker marks a failed SPDY upgrade as an
// httpstream.UpgradeFailureError, which client-go's SPDY path does not do
// itself, so that the fallback to WebSocket happens and callers can see the
// HTTP status.
type refusalMarker struct{ spdy.Upgrader }

// NewConnection implements spdy.Upgrader.
func (m refusalMarker) NewConnection(resp *http.Response) (conn compathttpstream.Connection, err error) {
	conn, err = m.Upgrader.NewConnection(resp)
	if err != nil {
		return nil, &httpstream.UpgradeFailureError{Cause: &UpgradeRefusedError{StatusCode: resp.StatusCode, Err: err}}
	}
	return conn, nil
}

// IsForbidden reports whether an exec error is an authorisation refusal
// (HTTP 403), whichever of SPDY or WebSocket reported it, so the backend can
// name the permission that is missing.
func IsForbidden(err error) bool {
	if apierrors.IsForbidden(err) {
		return true
	}
	var uf *httpstream.UpgradeFailureError
	if errors.As(err, &uf) {
		var refused *UpgradeRefusedError
		if errors.As(uf.Cause, &refused) {
			return refused.StatusCode == http.StatusForbidden
		}
		return apierrors.IsForbidden(uf.Cause)
	}
	var refused *UpgradeRefusedError
	return errors.As(err, &refused) && refused.StatusCode == http.StatusForbidden
}
