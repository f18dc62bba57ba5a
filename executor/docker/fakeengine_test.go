package docker

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEngine is a hand-written Docker Engine API server on a unix socket. It
// answers the calls the backend makes (ping, list with label filters,
// inspect, archive, logs, wait, kill, events) from an in-memory set of
// containers, and records the requests so tests can assert what was asked.
type fakeEngine struct {
	t          *testing.T
	sock       string
	apiVersion string

	// noEvents makes /events fail, as an engine whose events stream is
	// broken would.
	noEvents bool
	// seen receives every request as "METHOD /path" (without the version),
	// so tests can wait for the backend to reach a point without sleeping.
	seen chan string

	mu         sync.Mutex
	containers []*fakeContainer
	requests   []string
	subs       map[chan fakeEvent]map[string]map[string]bool
}

// fakeContainer is one container on the fake engine.
type fakeContainer struct {
	ID       string
	Name     string // the docker name, k8s_<container>_<pod>_<ns>_<uid>_<attempt>
	Labels   map[string]string
	Created  int64
	State    string
	ExitCode int
	Tty      bool
	// Files maps absolute paths to contents; a path ending in "/" is a
	// directory, a value starting with "->" a symbolic link to the rest.
	Files map[string]string
	// RawArchive, when set, is sent for every archive request instead of
	// the tar built from Files (to test hostile streams).
	RawArchive []byte
	// Stdout and Stderr are the log, written alternately line by line.
	Stdout, Stderr []string
	// IgnoreTERM makes SIGTERM do nothing; otherwise it stops the
	// container with exit code 0.
	IgnoreTERM bool

	stopped chan struct{} // closed when it leaves running
	signals []string
}

type fakeEvent struct {
	action string
	c      *fakeContainer
}

var versionPrefix = regexp.MustCompile(`^/v[0-9.]+`)

// newFakeEngine starts a fake engine speaking apiVersion on a unix socket in
// t.TempDir() (or a shorter temporary folder when that path is too long for
// a socket).
func newFakeEngine(t *testing.T, apiVersion string) *fakeEngine {
	t.Helper()
	dir := t.TempDir()
	if len(dir) > 80 {
		var err error
		if dir, err = os.MkdirTemp("", "dkr"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	f := &fakeEngine{t: t, sock: filepath.Join(dir, "docker.sock"), apiVersion: apiVersion, subs: map[chan fakeEvent]map[string]map[string]bool{}, seen: make(chan string, 4096)}
	l, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatalf("listen on %s: %v", f.sock, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

// podLabels are the labels cri-dockerd would set for container name of the
// pod ns/pod with uid.
func podLabels(ns, pod, uid, name string) map[string]string {
	return map[string]string{LabelPodNamespace: ns, LabelPodName: pod, LabelPodUID: uid, LabelContainerName: name}
}

// add puts c on the engine (state "created" unless set) and announces it.
func (f *fakeEngine) add(c *fakeContainer) *fakeContainer {
	f.mu.Lock()
	if c.State == "" {
		c.State = "created"
	}
	if c.ID == "" {
		c.ID = fmt.Sprintf("%02d", len(f.containers)+1) + strings.Repeat("c", 62)
	}
	if c.Created == 0 {
		c.Created = int64(1000 + len(f.containers))
	}
	c.stopped = make(chan struct{})
	if c.State != "running" {
		close(c.stopped)
	}
	f.containers = append(f.containers, c)
	f.mu.Unlock()
	f.publish("create", c)
	return c
}

// start moves a created container to running and announces it.
func (f *fakeEngine) start(c *fakeContainer) {
	f.mu.Lock()
	c.State = "running"
	c.stopped = make(chan struct{})
	f.mu.Unlock()
	f.publish("start", c)
}

// stop moves a running container to exited with code.
func (f *fakeEngine) stop(c *fakeContainer, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopLocked(c, code)
}

func (f *fakeEngine) stopLocked(c *fakeContainer, code int) {
	if c.State != "running" {
		return
	}
	c.State, c.ExitCode = "exited", code
	close(c.stopped)
}

func (f *fakeEngine) stateOf(c *fakeContainer) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return c.State
}

func (f *fakeEngine) signalsOf(c *fakeContainer) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), c.signals...)
}

func (f *fakeEngine) requestLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *fakeEngine) publish(action string, c *fakeContainer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch, filters := range f.subs {
		if !matchEvent(filters, action, c) {
			continue
		}
		select {
		case ch <- fakeEvent{action: action, c: c}:
		default:
		}
	}
}

func (f *fakeEngine) byID(id string) *fakeContainer {
	for _, c := range f.containers {
		if c.ID == id || strings.TrimPrefix(c.Name, "/") == id {
			return c
		}
	}
	return nil
}

func (f *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	version := versionPrefix.FindString(p)
	p = strings.TrimPrefix(p, version)
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	select {
	case f.seen <- r.Method + " " + p:
	default:
	}

	if p == "/_ping" {
		w.Header().Set("Api-Version", f.apiVersion)
		w.Header().Set("Ostype", "linux")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			writeString(w, "OK")
		}
		return
	}
	// A real 20.10 engine refuses versions above its own.
	if version != "" && versionLess(f.apiVersion, strings.TrimPrefix(version, "/v")) {
		apiError(w, http.StatusBadRequest, fmt.Sprintf("client version %s is too new. Maximum supported API version is %s", strings.TrimPrefix(version, "/v"), f.apiVersion))
		return
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch {
	case r.Method == http.MethodGet && p == "/containers/json":
		f.list(w, r)
	case r.Method == http.MethodGet && p == "/events" && f.noEvents:
		apiError(w, http.StatusInternalServerError, "events are broken here")
	case r.Method == http.MethodGet && p == "/events":
		f.events(w, r)
	case len(parts) == 3 && parts[0] == "containers":
		f.mu.Lock()
		c := f.byID(parts[1])
		f.mu.Unlock()
		if c == nil {
			apiError(w, http.StatusNotFound, "No such container: "+parts[1])
			return
		}
		switch r.Method + " " + parts[2] {
		case "GET json":
			f.inspect(w, c)
		case "GET archive":
			f.archive(w, r, c)
		case "GET logs":
			f.logs(w, r, c)
		case "POST wait":
			f.wait(w, r, c)
		case "POST kill":
			f.kill(w, r, c)
		default:
			apiError(w, http.StatusNotFound, "page not found")
		}
	default:
		apiError(w, http.StatusNotFound, "page not found")
	}
}

func (f *fakeEngine) list(w http.ResponseWriter, r *http.Request) {
	filters := parseFilters(f.t, r)
	all := r.URL.Query().Get("all") == "1"
	f.mu.Lock()
	var out []map[string]any
	for _, c := range f.containers {
		if !all && c.State != "running" {
			continue
		}
		if !matchLabels(filters["label"], c.Labels) {
			continue
		}
		out = append(out, map[string]any{
			"Id": c.ID, "Names": []string{"/" + strings.TrimPrefix(c.Name, "/")}, "Labels": c.Labels,
			"Created": c.Created, "State": c.State, "Status": c.State,
		})
	}
	f.mu.Unlock()
	writeJSON(w, out)
}

func (f *fakeEngine) inspect(w http.ResponseWriter, c *fakeContainer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	writeJSON(w, map[string]any{
		"Id":     c.ID,
		"Name":   "/" + c.Name,
		"State":  map[string]any{"Status": c.State, "Running": c.State == "running", "ExitCode": c.ExitCode},
		"Config": map[string]any{"Tty": c.Tty, "Labels": c.Labels},
	})
}

// archive answers GET /containers/{id}/archive as the engine does: a stat
// header and a tar rooted at the base name of the path.
func (f *fakeEngine) archive(w http.ResponseWriter, r *http.Request, c *fakeContainer) {
	p := path.Clean(r.URL.Query().Get("path"))
	if c.RawArchive != nil {
		setStat(w, map[string]any{"name": path.Base(p), "mode": 0o644})
		w.Write(c.RawArchive)
		return
	}
	content, isFile := c.Files[p]
	_, isDir := c.Files[p+"/"]
	if !isFile && !isDir {
		apiError(w, http.StatusNotFound, fmt.Sprintf("Could not find the file %s in container %s", p, c.ID))
		return
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	base := path.Base(p)
	switch {
	case isFile && strings.HasPrefix(content, "->"):
		setStat(w, map[string]any{"name": base, "mode": uint32(os.ModeSymlink | 0o777), "linkTarget": strings.TrimPrefix(content, "->")})
		tw.WriteHeader(&tar.Header{Name: base, Typeflag: tar.TypeSymlink, Linkname: strings.TrimPrefix(content, "->"), Mode: 0o777})
	case isFile:
		setStat(w, map[string]any{"name": base, "size": len(content), "mode": 0o644})
		tw.WriteHeader(&tar.Header{Name: base, Typeflag: tar.TypeReg, Size: int64(len(content)), Mode: 0o644})
		tw.Write([]byte(content))
	default:
		setStat(w, map[string]any{"name": base, "size": 4096, "mode": uint32(os.ModeDir | 0o755)})
		var names []string
		for n := range c.Files {
			if strings.HasPrefix(n, p+"/") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			name := base + strings.TrimPrefix(n, p)
			if strings.HasSuffix(n, "/") {
				tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755})
				continue
			}
			tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(c.Files[n])), Mode: 0o644})
			tw.Write([]byte(c.Files[n]))
		}
	}
	tw.Close()
	w.Write(buf.Bytes())
}

func setStat(w http.ResponseWriter, stat map[string]any) {
	b, _ := json.Marshal(stat)
	w.Header().Set("X-Docker-Container-Path-Stat", base64.StdEncoding.EncodeToString(b))
	w.Header().Set("Content-Type", "application/x-tar")
}

// logs answers with the multiplexed stream format: an 8-byte header (stream,
// 3 zero bytes, big-endian length) before each chunk; raw for a TTY.
func (f *fakeEngine) logs(w http.ResponseWriter, r *http.Request, c *fakeContainer) {
	q := r.URL.Query()
	wantOut, wantErr := q.Get("stdout") == "1", q.Get("stderr") == "1"
	if c.Tty {
		w.Header().Set("Content-Type", "application/vnd.docker.raw-stream")
		for _, l := range c.Stdout {
			writeString(w, l)
		}
		return
	}
	w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	frame := func(stream byte, s string) {
		hdr := make([]byte, 8)
		hdr[0] = stream
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(s)))
		w.Write(hdr)
		writeString(w, s)
	}
	for i := 0; i < max(len(c.Stdout), len(c.Stderr)); i++ {
		if wantOut && i < len(c.Stdout) {
			frame(1, c.Stdout[i])
		}
		if wantErr && i < len(c.Stderr) {
			frame(2, c.Stderr[i])
		}
	}
}

// wait answers POST /containers/{id}/wait?condition=not-running: headers at
// once (as the engine does), the body when the container is not running.
func (f *fakeEngine) wait(w http.ResponseWriter, r *http.Request, c *fakeContainer) {
	if cond := r.URL.Query().Get("condition"); cond != "not-running" {
		f.t.Errorf("wait with condition %q, want not-running", cond)
	}
	f.mu.Lock()
	stopped := c.stopped
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	select {
	case <-stopped:
	case <-r.Context().Done():
		return
	}
	f.mu.Lock()
	code := c.ExitCode
	f.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"StatusCode": code})
}

func (f *fakeEngine) kill(w http.ResponseWriter, r *http.Request, c *fakeContainer) {
	sig := r.URL.Query().Get("signal")
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.State != "running" {
		apiError(w, http.StatusConflict, fmt.Sprintf("Cannot kill container: %s: Container %s is not running", c.ID, c.ID))
		return
	}
	c.signals = append(c.signals, sig)
	switch {
	case sig == "SIGKILL":
		f.stopLocked(c, 137)
	case sig == "SIGTERM" && !c.IgnoreTERM:
		f.stopLocked(c, 0)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeEngine) events(w http.ResponseWriter, r *http.Request) {
	filters := parseFilters(f.t, r)
	ch := make(chan fakeEvent, 16)
	f.mu.Lock()
	f.subs[ch] = filters
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case ev := <-ch:
			json.NewEncoder(w).Encode(map[string]any{
				"Type": "container", "Action": ev.action,
				"Actor": map[string]any{"ID": ev.c.ID, "Attributes": ev.c.Labels},
				"time":  time.Now().Unix(),
			})
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// awaitRequest waits until the backend has sent a request whose
// "METHOD /path" contains substr.
func (f *fakeEngine) awaitRequest(t *testing.T, substr string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case req := <-f.seen:
			if strings.Contains(req, substr) {
				return
			}
		case <-timeout:
			t.Fatalf("backend never sent a request matching %q; requests: %v", substr, f.requestLog())
		}
	}
}

func (f *fakeEngine) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

func parseFilters(t *testing.T, r *http.Request) map[string]map[string]bool {
	filters := map[string]map[string]bool{}
	if s := r.URL.Query().Get("filters"); s != "" {
		if err := json.Unmarshal([]byte(s), &filters); err != nil {
			t.Errorf("filters %q: %v", s, err)
		}
	}
	return filters
}

// matchLabels applies label filters as the engine does: every one must hold.
func matchLabels(want map[string]bool, labels map[string]string) bool {
	for kv := range want {
		k, v, hasValue := strings.Cut(kv, "=")
		got, ok := labels[k]
		if !ok || (hasValue && got != v) {
			return false
		}
	}
	return true
}

func matchEvent(filters map[string]map[string]bool, action string, c *fakeContainer) bool {
	if ts := filters["type"]; len(ts) > 0 && !ts["container"] {
		return false
	}
	if es := filters["event"]; len(es) > 0 && !es[action] {
		return false
	}
	return matchLabels(filters["label"], c.Labels)
}

func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeString(w http.ResponseWriter, s string) { w.Write([]byte(s)) }

// versionLess compares "1.41"-style versions.
func versionLess(a, b string) bool {
	var a1, a2, b1, b2 int
	fmt.Sscanf(a, "%d.%d", &a1, &a2)
	fmt.Sscanf(b, "%d.%d", &b1, &b2)
	return a1 < b1 || (a1 == b1 && a2 < b2)
}
