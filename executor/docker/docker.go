// Package docker is the ContainerRuntimeExecutor over the Docker Engine API on
// the node's docker.sock: the backend for nodes whose pods run on Docker
// (cri-dockerd, formerly dockershim).
//
// Containers are found by the labels cri-dockerd puts on them (pod namespace,
// name and UID, container name). Files are read through the archive API, which
// works on stopped containers and reads the image's layers too; logs come from
// the logs API, demultiplexed; Wait uses the wait API, so it learns of an exit
// on the node, without polling; Kill signals from outside the container
// through the engine, so it can SIGKILL a PID 1 that ignores SIGTERM.
//
// The client negotiates the API version down to the engine's (Docker 20.10
// speaks 1.41; the client supports 1.40 and later).
package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Defaults for Config (the socket's is workflow.DefaultDockerSockPath).
const (
	// DefaultStatusBound is how long Wait goes on waiting for the engine to
	// see a container stop once the pod's status (the kubelet's report)
	// says it terminated.
	DefaultStatusBound = 30 * time.Second
	// DefaultStatusPoll is how often Wait reads the pod's status.
	DefaultStatusPoll = 10 * time.Second
	// DefaultFindTimeout bounds how long Wait looks for a container that
	// does not exist yet, or has not started yet.
	DefaultFindTimeout = 60 * time.Second
)

// Labels cri-dockerd (and dockershim before it) puts on every container of a
// pod. They are how this backend finds a pod's containers.
const (
	// LabelPodNamespace holds the pod's namespace.
	LabelPodNamespace = "io.kubernetes.pod.namespace"
	// LabelPodName holds the pod's name.
	LabelPodName = "io.kubernetes.pod.name"
	// LabelPodUID holds the pod's UID, which tells a pod from an earlier
	// one of the same name.
	LabelPodUID = "io.kubernetes.pod.uid"
	// LabelContainerName holds the container's name in the pod spec.
	LabelContainerName = "io.kubernetes.container.name"
	// LabelRestartCount is the container annotation restartCount, which
	// cri-dockerd copies into a label: the attempt number of a container.
	LabelRestartCount = "annotation.io.kubernetes.container.restartCount"
	// SandboxContainerName is the value of LabelContainerName on the pod
	// sandbox (pause) container, which is never one of the pod's containers.
	SandboxContainerName = "POD"
)

// readBufferSize is the HTTP transport's read buffer: the archive and logs
// streams are read through it, and the default 4 KiB costs a syscall per
// 4 KiB.
const readBufferSize = 256 * 1024

// configKey is the ConfigMap key that sets the socket path, named in errors.
const configKey = "dockerSockPath"

// MaxFileContentsBytes is the largest file GetFileContents returns: it is for
// output parameters, which must fit the pod's annotation budget anyway. Larger
// files are an error that says to use an artifact.
const MaxFileContentsBytes = workflow.MaxAnnotationBytes

// ErrContainerNotFound is wrapped by errors for a container that no
// container on the engine carries the labels of. Check it with errors.Is.
var ErrContainerNotFound = errors.New("container not found on the Docker engine")

// Config configures the docker backend.
type Config struct {
	// SockPath is the Docker Engine's unix socket; empty means
	// workflow.DefaultDockerSockPath.
	SockPath string
	// Namespace is the namespace of the pod whose containers the backend
	// reaches. Required.
	Namespace string
	// PodName is the name of that pod. Required.
	PodName string
	// PodUID, when set, is matched too, so that a pod recreated under the
	// same name is never confused with this one.
	PodUID string
	// FindTimeout bounds how long Wait looks for a container that does not
	// exist yet or has not started yet; zero means DefaultFindTimeout.
	FindTimeout time.Duration
	// PodStatus, when set, reads the pod through the API server: Wait
	// cross-checks the engine with the container statuses the kubelet
	// reports (dockerd has been seen to miss an exit and show a container
	// running for minutes after its process was gone, and the engine's wait
	// API has no bound of its own). Nil means the engine alone is trusted.
	PodStatus func(ctx context.Context) (*corev1.Pod, error)
	// StatusBound is how long Wait goes on once the pod's status says the
	// container terminated while the engine still shows it running; then
	// Wait fails naming both. Zero means DefaultStatusBound.
	StatusBound time.Duration
	// StatusPoll is how often Wait reads the pod's status; zero means
	// DefaultStatusPoll.
	StatusPoll time.Duration
	// Clock paces the status polls and the bound; nil means the real clock.
	Clock clock.WithTicker
}

// Executor is the docker backend. It is safe for concurrent use.
type Executor struct {
	cfg Config
	log *logrus.Entry
	cli *client.Client
	// dial opens the socket; the client uses it, and so does the diagnosis
	// of a failed connection, which needs the raw errno.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu        sync.Mutex
	connected bool
}

var _ executor.ContainerRuntimeExecutor = (*Executor)(nil)

// New returns a docker backend for the pod cfg names. It does not connect:
// the first call does, and a socket that is missing or may not be opened is
// an error naming its path and the ConfigMap key dockerSockPath.
func New(cfg Config, log *logrus.Entry) (*Executor, error) {
	var d net.Dialer
	return newExecutor(cfg, log, d.DialContext)
}

func newExecutor(cfg Config, log *logrus.Entry, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*Executor, error) {
	if cfg.SockPath == "" {
		cfg.SockPath = workflow.DefaultDockerSockPath
	}
	if cfg.FindTimeout == 0 {
		cfg.FindTimeout = DefaultFindTimeout
	}
	if cfg.StatusBound == 0 {
		cfg.StatusBound = DefaultStatusBound
	}
	if cfg.StatusPoll == 0 {
		cfg.StatusPoll = DefaultStatusPoll
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Namespace == "" || cfg.PodName == "" {
		return nil, fmt.Errorf("docker: pod namespace and name are required (got %q/%q; set %s and %s)", cfg.Namespace, cfg.PodName, workflow.EnvPodNamespace, workflow.EnvPodName)
	}
	if cfg.FindTimeout < 0 {
		return nil, fmt.Errorf("docker: find timeout %s is negative", cfg.FindTimeout)
	}
	e := &Executor{cfg: cfg, log: log.WithField("backend", workflow.ExecutorDocker), dial: dial}
	sock := cfg.SockPath
	cli, err := client.New(
		client.WithHTTPClient(&http.Client{
			Transport: &http.Transport{
				// As the client's default; bigger reads for the archive stream.
				MaxIdleConns:    6,
				IdleConnTimeout: 30 * time.Second,
				ReadBufferSize:  readBufferSize,
			},
			CheckRedirect: client.CheckRedirect,
		}),
		client.WithHost("unix://"+sock),
		client.WithScheme("http"),
		// The socket is fixed: whatever address the transport asks for,
		// dial the configured path.
		client.WithDialContext(func(ctx context.Context, _, _ string) (net.Conn, error) {
			return e.dial(ctx, "unix", sock)
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("docker: create Engine API client for %s: %w", sock, err)
	}
	e.cli = cli
	return e, nil
}

// Close releases the client's idle connections.
func (e *Executor) Close() error {
	return e.cli.Close()
}

// connect pings the engine once, negotiating the API version; later calls
// return at once. A failure is diagnosed by dialling the socket directly, so
// the error says whether it is missing, forbidden or dead.
func (e *Executor) connect(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.connected {
		return nil
	}
	ping, err := e.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("connect to the Docker engine at %s: %w", e.cfg.SockPath, ctxErr)
		}
		return e.diagnose(ctx, err)
	}
	e.connected = true
	e.log.WithFields(logrus.Fields{"apiVersion": e.cli.ClientVersion(), "engineAPIVersion": ping.APIVersion, "socket": e.cfg.SockPath}).Debug("connected to the Docker engine")
	return nil
}

// diagnose turns a failed ping into an error that says what is wrong with
// the socket and which setting to change.
func (e *Executor) diagnose(ctx context.Context, pingErr error) error {
	sock := e.cfg.SockPath
	if !client.IsErrConnectionFailed(pingErr) {
		// The engine answered, but not as one we can use (for example an
		// API version older than the client's minimum).
		return fmt.Errorf("connect to the Docker engine at %s (ConfigMap key %s): %w", sock, configKey, pingErr)
	}
	conn, err := e.dial(ctx, "unix", sock)
	if err == nil {
		conn.Close()
		return fmt.Errorf("connect to the Docker engine at %s (ConfigMap key %s): %w", sock, configKey, pingErr)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("docker socket %s does not exist (ConfigMap key %s): is Docker the container runtime of this node, and is the socket mounted into the wait container? On nodes whose pods do not run on Docker use the %s or %s backend: %w",
			sock, configKey, workflow.ExecutorK8sAPI, workflow.ExecutorKubelet, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied opening docker socket %s (ConfigMap key %s): the wait container must run as a user that may open it (root, or the socket's group): %w", sock, configKey, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing listens on docker socket %s (ConfigMap key %s): is the Docker engine running? %w", sock, configKey, err)
	default:
		return fmt.Errorf("connect to docker socket %s (ConfigMap key %s): %w", sock, configKey, err)
	}
}

// podLabels returns the label filters that select the pod's containers, in
// a fixed order for messages.
func (e *Executor) podLabels() []string {
	labels := []string{LabelPodNamespace + "=" + e.cfg.Namespace, LabelPodName + "=" + e.cfg.PodName}
	if e.cfg.PodUID != "" {
		labels = append(labels, LabelPodUID+"="+e.cfg.PodUID)
	}
	return labels
}

// containerLabels returns the label filters that select one container.
func (e *Executor) containerLabels(name string) []string {
	return append(e.podLabels(), LabelContainerName+"="+name)
}

// pod names the pod in messages.
func (e *Executor) pod() string { return e.cfg.Namespace + "/" + e.cfg.PodName }

// list returns the pod's containers (all attempts, stopped ones too),
// sandbox excluded; name, if not empty, narrows it to that container.
func (e *Executor) list(ctx context.Context, name string) ([]container.Summary, error) {
	if err := e.connect(ctx); err != nil {
		return nil, err
	}
	labels := e.podLabels()
	if name != "" {
		labels = e.containerLabels(name)
	}
	f := client.Filters{}
	f.Add("label", labels...)
	res, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers labelled %s: %w", strings.Join(labels, ","), err)
	}
	out := res.Items[:0]
	for _, c := range res.Items {
		if n := c.Labels[LabelContainerName]; n != "" && n != SandboxContainerName {
			out = append(out, c)
		}
	}
	return out, nil
}

// lookup returns the newest attempt of the named container. A container
// that does not exist is an error wrapping ErrContainerNotFound that names
// the labels searched.
func (e *Executor) lookup(ctx context.Context, name string) (container.Summary, error) {
	cs, err := e.list(ctx, name)
	if err != nil {
		return container.Summary{}, err
	}
	if len(cs) == 0 {
		return container.Summary{}, e.notFound(name)
	}
	return newest(cs), nil
}

func (e *Executor) notFound(name string) error {
	return fmt.Errorf("%w: no container labelled %s; does this node run its pods on Docker (cri-dockerd)? If not, use the %s or %s backend",
		ErrContainerNotFound, strings.Join(e.containerLabels(name), ","), workflow.ExecutorK8sAPI, workflow.ExecutorKubelet)
}

// newest picks the latest attempt: highest restart count, then latest
// creation. cs must not be empty.
func newest(cs []container.Summary) container.Summary {
	best := cs[0]
	for _, c := range cs[1:] {
		ca, ba := attempt(c), attempt(best)
		if ca > ba || (ca == ba && c.Created > best.Created) {
			best = c
		}
	}
	return best
}

// attempt is a container's restart count, from its label or, failing that,
// from the last field of its name (k8s_<container>_<pod>_<ns>_<uid>_<attempt>).
func attempt(c container.Summary) int {
	if n, err := strconv.Atoi(c.Labels[LabelRestartCount]); err == nil {
		return n
	}
	for _, name := range c.Names {
		if i := strings.LastIndexByte(name, '_'); i >= 0 {
			if n, err := strconv.Atoi(name[i+1:]); err == nil {
				return n
			}
		}
	}
	return -1
}

// ListContainerNames implements executor.ContainerRuntimeExecutor. Docker
// does not know init from regular containers; the names come in the order
// the containers were first created, which puts init containers (and native
// sidecars) first, as the kubelet starts them first.
func (e *Executor) ListContainerNames(ctx context.Context) ([]string, error) {
	cs, err := e.list(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("docker: list containers of pod %s: %w", e.pod(), err)
	}
	first := map[string]int64{}
	for _, c := range cs {
		n := c.Labels[LabelContainerName]
		if t, ok := first[n]; !ok || c.Created < t {
			first[n] = c.Created
		}
	}
	names := make([]string, 0, len(first))
	for n := range first {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if first[names[i]] != first[names[j]] {
			return first[names[i]] < first[names[j]]
		}
		return names[i] < names[j]
	})
	return names, nil
}

// isNotFound reports whether the engine said 404.
func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// isConflict reports whether the engine said 409 (for kill: not running).
func isConflict(err error) bool { return cerrdefs.IsConflict(err) }

// shortID shortens a container ID for messages.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
