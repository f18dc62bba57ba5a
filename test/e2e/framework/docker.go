// This file carries no e2e build tag: hack/tools/dockernode (make demo) uses this client too.

package framework

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// DockerAPIVersion is the Engine API version the tests speak: Debian's dockerd 20.10 serves 1.41.
const DockerAPIVersion = "v1.41"

// Docker is a minimal Docker Engine API client over a unix socket, net/http only.
type Docker struct {
	Sock string
	HTTP *http.Client
}

// NewDocker returns a client for the socket.
func NewDocker(sock string) *Docker {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableCompression: true,
	}
	return &Docker{Sock: sock, HTTP: &http.Client{Transport: tr}}
}

// DockerError is a non-2xx answer from the engine.
type DockerError struct {
	Method, Path string
	Status       int
	Message      string
}

// Error implements error.
func (e *DockerError) Error() string {
	return fmt.Sprintf("docker %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Message)
}

// Do sends a request (body marshalled as JSON unless it is an io.Reader) and decodes a JSON
// answer into out (unless out is nil).
func (d *Docker) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd, ctype = b, "application/x-tar"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return err
		}
		rd, ctype = bytes.NewReader(data), "application/json"
	}
	u := "http://docker/" + DockerAPIVersion + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("docker %s %s (is dockerd up on %s? hack/cluster.sh up dockerd): %w", method, path, d.Sock, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var em struct{ Message string }
		if json.Unmarshal(msg, &em) == nil && em.Message != "" {
			msg = []byte(em.Message)
		}
		return &DockerError{Method: method, Path: path, Status: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Ping checks that the engine answers.
func (d *Docker) Ping(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
	if err != nil {
		return err
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("dockerd on %s does not answer (hack/cluster.sh up dockerd): %w", d.Sock, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "OK" {
		return fmt.Errorf("docker _ping: HTTP %d %q", resp.StatusCode, b)
	}
	return nil
}

// ContainerSpec is the subset of POST /containers/create the tests use.
type ContainerSpec struct {
	Image      string            `json:"Image"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
	HostConfig HostConfig        `json:"HostConfig"`
}

// HostConfig is the subset of the create body's HostConfig the tests use.
type HostConfig struct {
	NetworkMode string   `json:"NetworkMode,omitempty"`
	PidMode     string   `json:"PidMode,omitempty"`
	Binds       []string `json:"Binds,omitempty"`
	AutoRemove  bool     `json:"AutoRemove,omitempty"`
}

// CreateContainer creates a container; "none" networking unless set (dockerd runs --bridge none).
func (d *Docker) CreateContainer(ctx context.Context, name string, spec ContainerSpec) (string, error) {
	if spec.HostConfig.NetworkMode == "" {
		spec.HostConfig.NetworkMode = "none"
	}
	var out struct{ Id string }
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	if err := d.Do(ctx, http.MethodPost, "/containers/create", q, spec, &out); err != nil {
		return "", err
	}
	return out.Id, nil
}

// StartContainer starts a created container.
func (d *Docker) StartContainer(ctx context.Context, id string) error {
	return d.Do(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
}

// WaitContainer blocks until the container is not running and returns its exit code.
func (d *Docker) WaitContainer(ctx context.Context, id string) (int, error) {
	var out struct {
		StatusCode int
		Error      *struct{ Message string }
	}
	if err := d.Do(ctx, http.MethodPost, "/containers/"+id+"/wait", url.Values{"condition": {"not-running"}}, nil, &out); err != nil {
		return -1, err
	}
	if out.Error != nil && out.Error.Message != "" {
		return out.StatusCode, fmt.Errorf("docker wait %s: %s", id, out.Error.Message)
	}
	return out.StatusCode, nil
}

// RemoveContainer force-removes a container (and its anonymous volumes).
func (d *Docker) RemoveContainer(ctx context.Context, id string) error {
	err := d.Do(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
	if de, ok := err.(*DockerError); ok && de.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// ContainerSummary is one entry of GET /containers/json.
type ContainerSummary struct {
	Id     string
	Names  []string
	Image  string
	State  string
	Labels map[string]string
}

// ListContainers lists containers (all states) whose labels match every "key=value" given.
func (d *Docker) ListContainers(ctx context.Context, labels ...string) ([]ContainerSummary, error) {
	filters, _ := json.Marshal(map[string][]string{"label": labels})
	q := url.Values{"all": {"1"}}
	if len(labels) > 0 {
		q.Set("filters", string(filters))
	}
	var out []ContainerSummary
	err := d.Do(ctx, http.MethodGet, "/containers/json", q, nil, &out)
	return out, err
}

// ContainerLogs returns a container's stdout and stderr, demultiplexed and concatenated in
// order: the last tail lines of each, or all of them when tail is 0.
func (d *Docker) ContainerLogs(ctx context.Context, id string, tail int) (string, error) {
	u := "http://docker/" + DockerAPIVersion + "/containers/" + id + "/logs?stdout=1&stderr=1"
	if tail > 0 {
		u += "&tail=" + strconv.Itoa(tail)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("docker logs %s on %s: %w", id, d.Sock, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", fmt.Errorf("docker logs %s: HTTP %d %s", id, resp.StatusCode, b)
	}
	var buf bytes.Buffer
	hdr := make([]byte, 8)
	for {
		if _, err := io.ReadFull(resp.Body, hdr); err != nil {
			if err == io.EOF {
				return buf.String(), nil
			}
			return buf.String(), err
		}
		if _, err := io.CopyN(&buf, resp.Body, int64(binary.BigEndian.Uint32(hdr[4:]))); err != nil {
			return buf.String(), err
		}
	}
}

// CRIDockerdLabels are the labels cri-dockerd puts on a pod's container: the docker backend
// finds containers by them.
func CRIDockerdLabels(namespace, pod, podUID, container string) map[string]string {
	return map[string]string{
		"io.kubernetes.pod.name":       pod,
		"io.kubernetes.pod.namespace":  namespace,
		"io.kubernetes.pod.uid":        podUID,
		"io.kubernetes.container.name": container,
		"io.kubernetes.docker.type":    "container",
	}
}
