package kubelet

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/internal/podexec"
)

func TestExecURL(t *testing.T) {
	env := newEnv(t)
	x := env.executor(t)
	tests := []struct {
		name       string
		req        podexec.ExecRequest
		wantParams map[string]string
	}{
		{
			name:       "tar with output and error",
			req:        podexec.ExecRequest{Container: "main", Command: []string{"tar", "-C", "/tmp", "-cf", "-", "out"}, Stdout: true, Stderr: true},
			wantParams: map[string]string{"output": "1", "error": "1"},
		},
		{
			name:       "awkward arguments are escaped one per command=",
			req:        podexec.ExecRequest{Container: "main", Command: []string{"sh", "-c", "echo a&b=c?d #e %41 ü; kill -s TERM 1"}, Stderr: true},
			wantParams: map[string]string{"error": "1"},
		},
		{
			name:       "stdin only when opened",
			req:        podexec.ExecRequest{Container: "side", Command: []string{"sh", "-c", "read -r _"}, Stdin: true, Stderr: true},
			wantParams: map[string]string{"input": "1", "error": "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := x.execURL(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if want := "/exec/" + testNS + "/" + testPod + "/" + tt.req.Container; u.Path != want {
				t.Errorf("path = %q, want %q", u.Path, want)
			}
			if u.Scheme != "https" || u.Host != env.cfg.addr() {
				t.Errorf("URL %s: want https://%s", u, env.cfg.addr())
			}
			q := u.Query()
			if got := q["command"]; !slices.Equal(got, tt.req.Command) {
				t.Errorf("command = %q, want %q (URL %s)", got, tt.req.Command, u)
			}
			for _, p := range []string{"input", "output", "error", "tty"} {
				if got, want := q.Get(p), tt.wantParams[p]; got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
		})
	}
}

// fakeExec is the /exec side of the fake kubelet: it refuses SPDY (POST)
// with spdyStatus, and over WebSocket (v5.channel.k8s.io) runs a few
// commands against an in-memory container.
type fakeExec struct {
	spdyStatus int    // 0: 403, as for a token with only nodes/proxy get
	wsStatus   int    // non-zero: refuse the WebSocket too
	wsBody     string // the WebSocket refusal's body (default: the status text)
	files      map[string]string
	// dies is closed when the container's PID 1 exits; with dieOnTERM, SIGTERM
	// closes it.
	dies      chan struct{}
	dieOnTERM bool
	// statusLags keeps the kubelet's status at running after SIGTERM.
	statusLags bool

	mu       sync.Mutex
	methods  []string
	commands [][]string
	termed   bool
}

func (f *fakeExec) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.methods = append(f.methods, r.Method)
	f.commands = append(f.commands, r.URL.Query()["command"])
	f.mu.Unlock()
	if r.Method == http.MethodPost {
		switch f.spdyStatus {
		case 0, http.StatusForbidden:
			http.Error(w, "Forbidden (user="+testSA+", verb=create, resource=nodes, subresource(s)=[proxy])", http.StatusForbidden)
		default:
			http.Error(w, http.StatusText(f.spdyStatus), f.spdyStatus)
		}
		return
	}
	if f.wsStatus != 0 {
		body := f.wsBody
		if body == "" {
			body = http.StatusText(f.wsStatus)
		}
		http.Error(w, body, f.wsStatus)
		return
	}
	up := websocket.Upgrader{Subprotocols: []string{"v5.channel.k8s.io"}, CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	var wmu sync.Mutex
	send := func(stream byte, data []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.WriteMessage(websocket.BinaryMessage, append([]byte{stream}, data...))
	}
	stdinEOF := make(chan struct{})
	go func() { // read stdin frames until the client closes stdin or the connection
		defer close(stdinEOF)
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil || (len(msg) >= 2 && msg[0] == 255 && msg[1] == 0) {
				return
			}
		}
	}()
	code := f.run(r.URL.Query()["command"], func(b []byte) { send(1, b) }, func(b []byte) { send(2, b) }, stdinEOF)
	status := `{"metadata":{},"status":"Success"}`
	if code != 0 {
		status = `{"metadata":{},"status":"Failure","reason":"NonZeroExitCode","message":"command terminated with non-zero exit code",` +
			`"details":{"causes":[{"reason":"ExitCode","message":"` + strconv.Itoa(code) + `"}]}}`
	}
	send(3, []byte(status))
	wmu.Lock()
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	wmu.Unlock()
}

// run is the fake container's shell: it knows what podexec runs.
func (f *fakeExec) run(cmd []string, stdout, stderr func([]byte), stdinEOF <-chan struct{}) int {
	switch {
	case len(cmd) == 3 && cmd[0] == "cat":
		content, ok := f.files[cmd[2]]
		if !ok {
			stderr([]byte("cat: can't open '" + cmd[2] + "': No such file or directory\n"))
			return 1
		}
		stdout([]byte(content))
		return 0
	case len(cmd) == 6 && cmd[0] == "tar":
		p := cmd[2] + "/" + cmd[5]
		content, ok := f.files[p]
		if !ok {
			stderr([]byte("tar: " + cmd[5] + ": No such file or directory\n"))
			return 1
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		_ = tw.WriteHeader(&tar.Header{Name: cmd[5], Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
		_, _ = io.WriteString(tw, content)
		_ = tw.Close()
		stdout(buf.Bytes())
		return 0
	case slices.Equal(cmd, []string{"sh", "-c", "read -r _"}):
		select {
		case <-stdinEOF:
			return 0
		case <-f.dies:
			return 137
		}
	case len(cmd) == 3 && cmd[0] == "sh" && strings.HasPrefix(cmd[2], "kill -s TERM 1"):
		f.mu.Lock()
		if f.dieOnTERM && !f.termed {
			close(f.dies)
		}
		f.termed = true
		f.mu.Unlock()
		return 0
	}
	stderr([]byte("sh: " + cmd[0] + ": not found\n"))
	return 127
}

func (f *fakeExec) wasTermed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.termed
}

// execEnv is a fake kubelet with an exec endpoint and main running.
func execEnv(t *testing.T, fe *fakeExec) (*testEnv, *Executor) {
	t.Helper()
	env := newEnv(t)
	env.f.exec = fe.serve
	env.f.setPods(func(w http.ResponseWriter, r *http.Request) {
		main := running()
		if fe.wasTermed() && !fe.statusLags {
			main = terminated(143)
		}
		p := pod(map[string]corev1.ContainerState{"main": main}, "main")
		p.Status.ContainerStatuses[0].ContainerID = "containerd://main-1"
		servePods(p)(w, r)
	})
	return env, env.executor(t)
}

func TestExecWebSocketWhenSPDYRefused(t *testing.T) {
	fe := &fakeExec{files: map[string]string{"/tmp/out": "42\n"}}
	env, x := execEnv(t, fe)

	got, err := x.GetFileContents(ctxT(t), "main", "/tmp/out")
	if err != nil || got != "42\n" {
		t.Fatalf("GetFileContents = %q, %v; want 42", got, err)
	}
	if want := []string{http.MethodPost, http.MethodGet}; !slices.Equal(fe.methods, want) {
		t.Errorf("exec requests = %v, want SPDY (POST) then WebSocket (GET)", fe.methods)
	}
	for _, tok := range env.f.seenTokens() {
		if tok != jwt(testSA) {
			t.Errorf("exec request carried token %q", tok)
		}
	}

	_, err = x.GetFileContents(ctxT(t), "main", "/tmp/missing")
	wantContains(t, err, "kubelet", `"main"`, "/tmp/missing", "No such file")
	var ee *executor.ExitCodeError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Errorf("error %v: want an *executor.ExitCodeError with code 1", err)
	}

	dest := filepath.Join(t.TempDir(), "out.tgz")
	if err := x.CopyFile(ctxT(t), "main", "/tmp/out", dest, gzip.NoCompression); err != nil {
		t.Fatalf("CopyFile: %v", err)
	}
	if entries := readTgz(t, dest); entries["out"] != "42\n" || len(entries) != 1 {
		t.Errorf("archive entries = %v, want out=42", entries)
	}
	var told []string
	for _, e := range env.hook.AllEntries() {
		if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "WebSocket") {
			told = append(told, e.Message)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], `lacks RBAC verb "create" on resource nodes/proxy`) || !strings.Contains(told[0], testSA) {
		t.Errorf("warnings about WebSocket = %q, want one naming nodes/proxy create and %s", told, testSA)
	}
}

func readTgz(t *testing.T, p string) map[string]string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

func TestExecRefused(t *testing.T) {
	tests := []struct {
		name     string
		spdy, ws int
		wsBody   string
		code     int
		want     []string
		not      []string
	}{
		{name: "no nodes/proxy at all (a kubelet that authorises WebSocket exec as get)", spdy: 403, ws: 403, code: 403,
			wsBody: "Forbidden (user=" + testSA + ", verb=get, resource=nodes, subresource(s)=[proxy])",
			want:   []string{"403", "service account " + testSA, `verb "get" on resource nodes/proxy`, `needs verb "create" too`, `"main"`, "/tmp/out", "authorises /exec as nodes/proxy only"}},
		{name: "nodes/proxy get only (a kubelet that authorises WebSocket exec as create, as v1.34's)", spdy: 403, ws: 403, code: 403,
			wsBody: "Forbidden (user=" + testSA + ", verb=create, resource=nodes, subresource(s)=[proxy])",
			want:   []string{"403", "service account " + testSA, `verb "create" on resource nodes/proxy`, "nodes/proxy get alone cannot exec", `"main"`, "/tmp/out"},
			not:    []string{`verb "get"`}},
		{name: "a refusal that names no verb", spdy: 403, ws: 403, code: 403,
			want: []string{"403", "service account " + testSA, `"create" (exec over SPDY`, `"get" (exec over WebSocket`, "grant nodes/proxy get and create", `"main"`}},
		{name: "token refused", spdy: 401, ws: 401, code: 401,
			want: []string{"401", "token", "service account " + testSA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := &fakeExec{spdyStatus: tt.spdy, wsStatus: tt.ws, wsBody: tt.wsBody}
			env, x := execEnv(t, fe)
			_, err := x.GetFileContents(ctxT(t), "main", "/tmp/out")
			t.Logf("error: %v", err)
			wantContains(t, err, tt.want...)
			for _, s := range tt.not {
				if err != nil && strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains %q", err, s)
				}
			}
			if tt.code == 401 {
				wantContains(t, err, env.tokenFile)
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tt.code {
				t.Errorf("error %v: want a *StatusError with code %d", err, tt.code)
			}
		})
	}
}

func TestExecWrongCA(t *testing.T) {
	env := newEnv(t)
	env.f.exec = (&fakeExec{}).serve
	env.cfg.CAFile = otherCAFile(t)
	x := env.executor(t)
	_, err := x.GetFileContents(ctxT(t), "main", "/tmp/out")
	t.Logf("error: %v", err)
	wantContains(t, err, "x509", env.cfg.CAFile, "kubeletCAFile", "kubeletInsecure")
	var te *TLSError
	if !errors.As(err, &te) {
		t.Errorf("error %v is not a *TLSError", err)
	}
}

func TestWaitExecWatch(t *testing.T) {
	fe := &fakeExec{dies: make(chan struct{})}
	_, x := execEnv(t, fe)
	x = withClock(x, newStepClock(true)) // polling never advances: only the exec session can end Wait
	done := make(chan error, 1)
	go func() { done <- x.Wait(ctxT(t), []string{"main"}) }()
	close(fe.dies) // main's PID 1 exits: the watch's shell is killed (137)
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	fe.mu.Lock()
	defer fe.mu.Unlock()
	if !slices.ContainsFunc(fe.commands, func(c []string) bool { return slices.Equal(c, []string{"sh", "-c", "read -r _"}) }) {
		t.Errorf("no exec watch among %q", fe.commands)
	}
}

func TestKill(t *testing.T) {
	tests := []struct {
		name string
		fe   *fakeExec
	}{
		{"status shows the exit", &fakeExec{}},
		{"exec watch sees the exit before status", &fakeExec{dies: make(chan struct{}), dieOnTERM: true, statusLags: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := tt.fe
			_, x := execEnv(t, fe)
			x = withClock(x, newStepClock(false))
			if err := x.Kill(ctxT(t), []string{"main"}, 10*time.Second); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if !fe.wasTermed() {
				t.Error("Kill sent no SIGTERM")
			}
			// Now stopped: a second Kill is a no-op, and Wait returns at once.
			fe.mu.Lock()
			n := len(fe.commands)
			fe.mu.Unlock()
			if err := x.Kill(ctxT(t), []string{"main"}, time.Second); err != nil {
				t.Fatalf("second Kill: %v", err)
			}
			if err := x.Wait(ctxT(t), []string{"main"}); err != nil {
				t.Fatalf("Wait after Kill: %v", err)
			}
			fe.mu.Lock()
			defer fe.mu.Unlock()
			if len(fe.commands) != n {
				t.Errorf("second Kill and Wait ran %q", fe.commands[n:])
			}
		})
	}

	env := newEnv(t)
	p := pod(map[string]corev1.ContainerState{"main": running()}, "main")
	share := true
	p.Spec.ShareProcessNamespace = &share
	env.f.setPods(servePods(p))
	err := env.executor(t).Kill(ctxT(t), []string{"main"}, time.Second)
	if !errors.Is(err, executor.ErrNotSupported) {
		t.Errorf("Kill in a shareProcessNamespace pod = %v, want ErrNotSupported", err)
	}
	wantContains(t, err, "shareProcessNamespace")
}
