// Package kubelet is the ContainerRuntimeExecutor that reaches the other
// containers of its pod through the HTTPS API of the kubelet on its own node
// (https://$ARGO_KUBELET_HOST:$ARGO_KUBELET_PORT, port 10250 by default),
// authenticated with the pod's service-account token and authorised by the
// kubelet's webhook against RBAC on the node's subresources.
//
// What it uses on the kubelet, and the grant each needs:
//
//	GET  /pods                          pod status (the whole node's list, decoded as a stream):
//	                                    nodes/pods get, or else nodes/proxy get (fine-grained kubelet
//	                                    authorization, GA in 1.36; older kubelets: nodes/proxy get alone)
//	GET  /containerLogs/{ns}/{pod}/{c}  GetOutputStream (stream=Stdout without combined): nodes/proxy get
//	POST /exec/{ns}/{pod}/{c} (SPDY)    files, kill, and Wait's fast path: needs nodes/proxy create
//	GET  /exec/{ns}/{pod}/{c} (WebSocket) the same where SPDY is refused: needs nodes/proxy get
//
// Files, copies, Wait, GetExitCode, ListContainerNames and Kill are the
// shared exec engine's (executor/internal/podexec); this package gives it the
// /exec Execer (exec.go), the /pods poll with its bounded backoff (pods.go)
// and the mapping of refusals to what to fix (transport.go). The API server
// is not in the data path: copies cost it nothing.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/internal/backoff"
	"github.com/argoexec/argoexec/executor/internal/podexec"
	"github.com/argoexec/argoexec/executor/internal/stdoutlog"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Defaults for Config's zero values.
const (
	// DefaultPollInitial is the first /pods poll interval of Wait.
	DefaultPollInitial = 100 * time.Millisecond
	// DefaultPollMax is the longest /pods poll interval of Wait.
	DefaultPollMax = time.Second
	// DefaultPollTimeout bounds one /pods read: a kubelet answers in well
	// under a second, so a read that takes longer is stuck (a stalled
	// connection, an overloaded kubelet) and is abandoned and retried on a
	// new connection rather than holding up Wait.
	DefaultPollTimeout = 5 * time.Second
)

// Config says where the kubelet is and how to trust and authenticate to it.
// Zero values take the defaults noted on each field.
type Config struct {
	// Host is the kubelet's address: the pod's status.hostIP (ARGO_KUBELET_HOST).
	Host string
	// Port is the kubelet's HTTPS port (ConfigMap kubeletPort); 0 means
	// workflow.DefaultKubeletPort (10250).
	Port int
	// Insecure skips verification of the kubelet's serving certificate
	// (ConfigMap kubeletInsecure). New logs a warning when it is set.
	Insecure bool
	// CAFile is the CA bundle that verifies the kubelet's serving certificate
	// (ConfigMap kubeletCAFile); empty means the in-cluster CA,
	// workflow.ServiceAccountCAPath. Ignored when Insecure.
	CAFile string
	// TokenFile holds the bearer token, re-read on every request; empty means
	// workflow.ServiceAccountTokenPath.
	TokenFile string
	// Namespace and PodName name the workflow pod (the caller's own).
	Namespace, PodName string
	// PollInitial is the first interval of Wait's /pods polling; 0 means 100ms.
	PollInitial time.Duration
	// PollMax bounds the interval as it backs off; 0 means 1s.
	PollMax time.Duration
	// PollTimeout bounds one /pods read, after which it is retried (within
	// the poll's bounded retries) on a new connection; 0 means
	// DefaultPollTimeout (5 s).
	PollTimeout time.Duration
	// ExitConfirmTimeout bounds how long GetExitCode waits for the status to
	// confirm an exit that Wait's exec fast path saw; 0 means
	// podexec.DefaultExitConfirmTimeout (10 s).
	ExitConfirmTimeout time.Duration
	// KillSettle: 0 means podexec.DefaultKillSettle (1 s).
	KillSettle time.Duration
	// NoExecWait turns off Wait's exec fast path: Wait then learns of exits
	// from /pods alone, 0.7-0.9 s later (for measurement, and for images
	// without sh).
	NoExecWait bool
}

// withDefaults returns cfg with its zero values filled in.
func (cfg Config) withDefaults() Config {
	if cfg.Port == 0 {
		cfg.Port = workflow.DefaultKubeletPort
	}
	if cfg.CAFile == "" {
		cfg.CAFile = workflow.ServiceAccountCAPath
	}
	if cfg.TokenFile == "" {
		cfg.TokenFile = workflow.ServiceAccountTokenPath
	}
	if cfg.PollInitial == 0 {
		cfg.PollInitial = DefaultPollInitial
	}
	if cfg.PollMax == 0 {
		cfg.PollMax = DefaultPollMax
	}
	if cfg.PollTimeout == 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	return cfg
}

// validate reports the first missing or inconsistent setting.
func (cfg Config) validate() error {
	var errs []error
	if cfg.Host == "" {
		errs = append(errs, fmt.Errorf("host is empty (set %s from status.hostIP)", workflow.EnvKubeletHost))
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is out of range (ConfigMap kubeletPort)", cfg.Port))
	}
	if cfg.Namespace == "" || cfg.PodName == "" {
		errs = append(errs, fmt.Errorf("pod namespace and name are required (%s, %s)", workflow.EnvPodNamespace, workflow.EnvPodName))
	}
	if cfg.PollInitial < 0 || cfg.PollMax < cfg.PollInitial {
		errs = append(errs, fmt.Errorf("poll intervals: need 0 < initial (%v) <= max (%v)", cfg.PollInitial, cfg.PollMax))
	}
	return errors.Join(errs...)
}

// addr is the kubelet's host:port.
func (cfg Config) addr() string { return net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)) }

// baseURL is the kubelet's https://host:port.
func (cfg Config) baseURL() string { return "https://" + cfg.addr() }

// Executor is the kubelet backend. It is safe for concurrent use. The
// methods of the shared exec engine (GetFileContents, CopyFile, Wait,
// GetExitCode, ListContainerNames, Kill, WaitPaths) run over the kubelet's
// /exec and /pods.
type Executor struct {
	*podexec.Engine
	cfg    Config
	log    *logrus.Entry
	rest   *rest.Config
	client *http.Client
	remote *podexec.RemoteExecer
	clock  clock.Clock // paces get's retries; set by newEngine

	// stdout knows whether /containerLogs can give stdout alone.
	stdout stdoutlog.Probe
}

var _ executor.ContainerRuntimeExecutor = (*Executor)(nil)

// New checks cfg and builds the Executor. It makes no request: a kubelet that
// is unreachable or refuses the token shows in the first call.
func New(cfg Config, log *logrus.Entry) (*Executor, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("kubelet: config: %w", err)
	}
	log = log.WithFields(logrus.Fields{"backend": workflow.ExecutorKubelet, "kubelet": cfg.addr()})
	if cfg.Insecure {
		log.Warnf("kubelet: TLS verification of the kubelet at %s is off (ConfigMap kubeletInsecure: true): "+
			"anyone who can intercept the connection gets the service-account token", cfg.addr())
	} else if err := checkCAFile(cfg.CAFile); err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	rc := restConfig(cfg)
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubelet: build client for %s: %w", cfg.addr(), err)
	}
	// Never follow redirects: kubelets before 1.20 could answer with a 302 to
	// the API server, and following it would send the token elsewhere.
	client = &http.Client{
		Transport: client.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	e := &Executor{cfg: cfg, log: log, rest: rc, client: client}
	e.remote = &podexec.RemoteExecer{Config: rc, URL: e.execURL}
	e.Engine = e.newEngine(clock.RealClock{})
	return e, nil
}

// newEngine builds the exec engine over /exec and /pods, timed by clk.
func (e *Executor) newEngine(clk clock.Clock) *podexec.Engine {
	e.clock = clk
	return podexec.New(podexec.Config{
		Backend:            workflow.ExecutorKubelet,
		Pod:                e.cfg.Namespace + "/" + e.cfg.PodName,
		Exec:               &kubeletExecer{e: e, remote: e.remote},
		Source:             &podPoller{e: e, clock: clk},
		Log:                e.log,
		Clock:              clk,
		KillSettle:         e.cfg.KillSettle,
		ExitConfirmTimeout: e.cfg.ExitConfirmTimeout,
		NoExecWait:         e.cfg.NoExecWait,
	})
}

// ExecSessions says how many exec sessions SPDY and WebSocket have carried
// (for tests that check which protocol a copy used).
func (e *Executor) ExecSessions() (spdy, websocket int) { return e.remote.Sessions() }

// get sends GET path?query to the kubelet and returns the response when it
// is 200 OK. Any other status is a *StatusError, whose 403 hint names the
// grant that path needs.
func (e *Executor) get(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := e.cfg.baseURL() + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	retry := backoff.Exponential(e.clock, authRetryFirst, authRetryMaxDelay)
	sawUnreachable := false
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := e.client.Do(req)
		if err != nil {
			return nil, e.mapTransportError(err)
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		serr := e.statusError(resp, "get", path)
		var se *StatusError
		if attempt >= authRetryAttempts || !errors.As(serr, &se) || !(authorizerUnreachable(se) || sawUnreachable && se.Code == http.StatusForbidden) {
			return nil, serr
		}
		sawUnreachable = true
		e.log.WithError(serr).WithField("retryIn", retry.Delay()).Info("kubelet: could not check the grant with the API server; asking again")
		if err := retry.Wait(ctx); err != nil {
			return nil, fmt.Errorf("%w (after %d attempts: %w)", serr, attempt, err)
		}
	}
}

// A kubelet checks each request's grant with the API server (a
// SubjectAccessReview); while it cannot reach it, as for a moment after the
// API server restarts, it answers 500 "Authorization error (user=…, verb=…,
// resource=nodes, subresource=proxy)". get asks again, authRetryAttempts
// times at most, waiting authRetryFirst doubling to authRetryMaxDelay
// (about 27 s in all). Once it has answered that, a 403 is asked again too:
// a kube-apiserver that has just started refuses every SubjectAccessReview
// until its RBAC caches are filled (the fault suite's APIServerDown10s got
// one 403 right after eleven seconds of 500s), so a refusal right after an
// outage is the restart, not the grants. A 403 that comes first is final.
const (
	authRetryAttempts = 9
	authRetryFirst    = 500 * time.Millisecond
	authRetryMaxDelay = 4 * time.Second
)

// authorizerUnreachable says whether se is the kubelet failing to check a
// grant, not refusing it (which is a 403).
func authorizerUnreachable(se *StatusError) bool {
	return se.Code == http.StatusInternalServerError && strings.HasPrefix(se.Body, "Authorization error")
}

// GetOutputStream streams the named container's log from the kubelet's
// /containerLogs: the log that exists when the request is made (no follow).
// Cancelling ctx ends the stream.
//
// Combined, it is the CRI log file, stdout and stderr interleaved in the
// order the runtime wrote them. Without combined it asks for stdout alone
// (stream=Stdout), which needs the kubelet feature gate
// PodLogsQuerySplitStreams (alpha since Kubernetes 1.32). With the gate off
// the kubelet refuses it (400, "Please enable PodLogsQuerySplitStreams
// feature gate in kubelet"); a kubelet older than 1.32 ignores the
// parameter, which the first stdout-only request checks once
// (executor/internal/stdoutlog). Where stdout alone cannot be had,
// combined=false is an error wrapping executor.ErrNotSupported that names
// the gate.
func (e *Executor) GetOutputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error) {
	open := func(query url.Values) func(context.Context) (io.ReadCloser, error) {
		return func(ctx context.Context) (io.ReadCloser, error) {
			resp, err := e.get(ctx, e.logPath(containerName), query)
			if err != nil {
				return nil, err
			}
			return resp.Body, nil
		}
	}
	var (
		rc  io.ReadCloser
		err error
	)
	if combined {
		rc, err = open(nil)(ctx)
	} else {
		rc, err = e.stdout.Open(ctx, stdoutlog.Request{
			Server:    "kubelet",
			Log:       e.log,
			Open:      open(url.Values{"stream": {"Stdout"}}),
			OpenProbe: open(url.Values{"stream": {stdoutlog.ProbeStream}, "limitBytes": {"1"}}),
			Refused: func(err error) bool {
				var se *StatusError
				return errors.As(err, &se) && (se.Code == http.StatusBadRequest || se.Code == http.StatusUnprocessableEntity)
			},
		})
	}
	switch {
	case errors.Is(err, stdoutlog.ErrUnsupported):
		return nil, errNoSplitLogs(containerName)
	case err != nil:
		return nil, fmt.Errorf("kubelet: get log of container %q from %s: %w", containerName, e.cfg.addr(), err)
	}
	return &logStream{ctx: ctx, rc: rc, container: containerName}, nil
}

// logPath is the /containerLogs path of container.
func (e *Executor) logPath(container string) string {
	return "/containerLogs/" + url.PathEscape(e.cfg.Namespace) + "/" + url.PathEscape(e.cfg.PodName) + "/" + url.PathEscape(container)
}

func errNoSplitLogs(container string) error {
	return executor.NotSupported(workflow.ExecutorKubelet, fmt.Sprintf("log of container %q without stderr", container),
		"the kubelet gives stdout alone only with the feature gate PodLogsQuerySplitStreams on (Kubernetes 1.32 or later); enable it, ask for combined output, or use the docker backend")
}

// logStream wraps read errors of a log stream with what was being read, and
// makes a cancelled ctx an error: net/http can end a body cut short by
// cancellation with a clean io.EOF, which would pass a truncated log off as
// the whole log.
type logStream struct {
	ctx       context.Context
	rc        io.ReadCloser
	container string
}

// Read implements io.Reader.
func (l *logStream) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	if errors.Is(err, io.EOF) && l.ctx.Err() != nil {
		err = l.ctx.Err()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("kubelet: read log of container %q: %w", l.container, err)
	}
	return n, err
}

// Close implements io.Closer.
func (l *logStream) Close() error { return l.rc.Close() }

// LogIncomplete says why the log of the named container, which has exited,
// may be missing the end of what it printed (the container runtime was down
// when it exited; the engine's LogIncomplete says how that is told), or ""
// when nothing says so. It asks /containerLogs for the last line with its
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

// lastLogLine asks /containerLogs for the timestamp of the container's last
// log entry.
func (e *Executor) lastLogLine(ctx context.Context, c string) (time.Time, bool, error) {
	resp, err := e.get(ctx, e.logPath(c), url.Values{"tailLines": {"1"}, "timestamps": {"true"}})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("get the last line of the log from %s: %w", e.cfg.addr(), err)
	}
	defer resp.Body.Close()
	return podexec.LastLineTime(resp.Body)
}
