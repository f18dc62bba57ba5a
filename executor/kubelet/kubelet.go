// Package kubelet is the ContainerRuntimeExecutor that reaches the other
// containers of its pod through the HTTPS API of the kubelet on its own node
// (https://$ARGO_KUBELET_HOST:$ARGO_KUBELET_PORT, port 10250 by default),
// authenticated with the pod's service-account token and authorised by the
// kubelet's webhook against RBAC nodes/proxy.
//
// What it uses on the kubelet:
//
//	GET  /pods                          pod status (the whole node's list, decoded as a stream)
//	GET  /containerLogs/{ns}/{pod}/{c}  GetOutputStream
//	POST /exec/{ns}/{pod}/{c} (SPDY)    files, kill, and Wait's fast path: needs nodes/proxy create
//	GET  /exec/{ns}/{pod}/{c} (WebSocket) the same where SPDY is refused: needs nodes/proxy get
//
// The API server is not in the data path: copies cost it nothing.
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
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/internal/podexec"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Defaults for Config's zero values.
const (
	// DefaultPort is the kubelet's HTTPS port.
	DefaultPort = 10250
	// DefaultPollInitial is the first /pods poll interval of Wait.
	DefaultPollInitial = 100 * time.Millisecond
	// DefaultPollMax is the longest /pods poll interval of Wait.
	DefaultPollMax = time.Second
)

// Config says where the kubelet is and how to trust and authenticate to it.
// Zero values take the defaults noted on each field.
type Config struct {
	// Host is the kubelet's address: the pod's status.hostIP (ARGO_KUBELET_HOST).
	Host string
	// Port is the kubelet's HTTPS port (ConfigMap kubeletPort); 0 means 10250.
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
}

// withDefaults returns cfg with its zero values filled in.
func (cfg Config) withDefaults() Config {
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
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

// Executor is the kubelet backend. It is safe for concurrent use.
type Executor struct {
	cfg    Config
	log    *logrus.Entry
	rest   *rest.Config
	client *http.Client

	// after is time.After, replaced in tests to drive Wait's polling.
	after func(time.Duration) <-chan time.Time
	// pe runs the exec-based operations shared with k8sapi through the
	// kubelet's /exec.
	pe *podexec.Client
	// watchExit blocks until the named container's processes die (Wait's
	// fast path); nil where it cannot run.
	watchExit func(ctx context.Context, container string) error

	mu sync.Mutex
	// exitSeen records, by container name, the container ID whose exec
	// watch ended because its processes died, before the kubelet's status
	// says so.
	exitSeen map[string]string
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
	e := &Executor{
		cfg:      cfg,
		log:      log,
		rest:     rc,
		client:   client,
		after:    time.After,
		exitSeen: map[string]string{},
	}
	e.pe = e.newPodexec()
	e.watchExit = e.pe.WaitExit
	return e, nil
}

// get sends GET path?query to the kubelet and returns the response when it
// is 200 OK. Any other status is a *StatusError; verb is the nodes/proxy verb
// the request needs, for the 403 hint.
func (e *Executor) get(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := e.cfg.baseURL() + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, e.mapTransportError(err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, e.statusError(resp, "get")
	}
	return resp, nil
}

// GetOutputStream streams the named container's log from the kubelet's
// /containerLogs. The kubelet serves the CRI log file, in which stdout and
// stderr lines are interleaved in the order the runtime wrote them; it cannot
// give stdout alone (the stream=Stdout selector is behind the alpha feature
// gate PodLogsQuerySplitStreams), so the stream is always that combination,
// and combined=false is logged and treated as combined. The log is what
// exists when the request is made (no follow). Cancelling ctx ends the stream.
func (e *Executor) GetOutputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error) {
	if !combined {
		e.log.WithField("container", containerName).Debug("kubelet: /containerLogs cannot separate stdout from stderr; streaming both")
	}
	path := "/containerLogs/" + url.PathEscape(e.cfg.Namespace) + "/" + url.PathEscape(e.cfg.PodName) + "/" + url.PathEscape(containerName)
	resp, err := e.get(ctx, path, nil)
	if err != nil {
		return nil, fmt.Errorf("kubelet: get log of container %q from %s: %w", containerName, e.cfg.addr(), err)
	}
	return &logStream{ctx: ctx, rc: resp.Body, container: containerName}, nil
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

// GetExitCode returns the exit code of the named container from the
// kubelet's pod status. If Wait saw the container's processes die through
// its exec watch before the kubelet's status caught up (0.7–0.9 s here), it
// polls /pods every PollInitial, for at most 10 s, until the status shows
// the exit.
func (e *Executor) GetExitCode(ctx context.Context, containerName string) (int, error) {
	code, err := e.exitCode(ctx, containerName)
	if err != nil {
		return 0, fmt.Errorf("kubelet: get exit code of container %q: %w", containerName, err)
	}
	return code, nil
}

// statusLag bounds how long GetExitCode waits for the kubelet's status to
// show an exit that the exec watch has already seen.
const statusLag = 10 * time.Second

func (e *Executor) exitCode(ctx context.Context, name string) (int, error) {
	e.mu.Lock()
	_, seen := e.exitSeen[name]
	e.mu.Unlock()
	var deadline <-chan time.Time
	if seen {
		deadline = e.after(statusLag)
	}
	// The exit has happened and the status will show it within about a
	// second: poll at the first interval, without backing off.
	interval := e.cfg.PollInitial
	for {
		pod, err := e.getPod(ctx)
		if err != nil {
			return 0, err
		}
		st, ok := containerStatus(pod, name)
		if !ok {
			return 0, fmt.Errorf("no container %q in pod %s/%s (containers: %v)", name, pod.Namespace, pod.Name, containerNames(pod))
		}
		if t := st.State.Terminated; t != nil {
			return int(t.ExitCode), nil
		}
		if !seen {
			return 0, fmt.Errorf("container %q is %s, not terminated", name, stateName(st.State))
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-deadline:
			return 0, fmt.Errorf("container %q: its processes died but after %v the kubelet still reports it %s", name, statusLag, stateName(st.State))
		case <-e.after(interval):
		}
	}
}

// ListContainerNames lists the pod's containers from the kubelet's copy of
// the pod: init containers (native sidecars included) first, in spec order.
func (e *Executor) ListContainerNames(ctx context.Context) ([]string, error) {
	pod, err := e.getPod(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubelet: list containers: %w", err)
	}
	return containerNames(pod), nil
}

// containerNames lists pod's init containers then its containers.
func containerNames(pod *corev1.Pod) []string {
	names := make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// containerStatus finds the status of the named container, init or not.
// A container the kubelet has not reported on yet has a zero status
// (state "waiting").
func containerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			if st.Name == name {
				return st, true
			}
		}
	}
	for _, n := range containerNames(pod) {
		if n == name {
			return corev1.ContainerStatus{Name: name}, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// stateName says in a word what state a container is in.
func stateName(s corev1.ContainerState) string {
	switch {
	case s.Terminated != nil:
		return "terminated"
	case s.Running != nil:
		return "running"
	case s.Waiting != nil && s.Waiting.Reason != "":
		return "waiting (" + s.Waiting.Reason + ")"
	default:
		return "waiting"
	}
}
