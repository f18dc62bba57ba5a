package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// pluginServer answers template.execute with the replies in turn (the last
// one again once they run out), recording the calls.
type pluginServer struct {
	*httptest.Server
	mu      sync.Mutex
	calls   []string // bodies
	auth    []string
	paths   []string
	replies []reply
}

type reply struct {
	status int
	body   string
}

func newPluginServer(t *testing.T, replies ...reply) *pluginServer {
	t.Helper()
	p := &pluginServer{replies: replies}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.calls = append(p.calls, string(b))
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		p.paths = append(p.paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		rep := p.replies[min(len(p.calls), len(p.replies))-1]
		p.mu.Unlock()
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *pluginServer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

const pluginTemplate = `{"name":"hello","plugin":{"hello":{"text":"hi"}}}`

func TestRunPlugin(t *testing.T) {
	tests := []struct {
		name        string
		plugins     [][]reply // one server per element
		wantPhase   wf.NodePhase
		wantMessage string
		wantCalls   []int
		wantRequeue time.Duration
	}{
		{"the plugin runs it", [][]reply{{{200, `{"node":{"phase":"Succeeded","message":"done","outputs":{"parameters":[{"name":"p","value":"v"}]}}}`}}},
			wf.NodeSucceeded, "done", []int{1}, 0},
		{"404 passes to the next", [][]reply{{{404, "no"}}, {{200, `{"node":{"phase":"Failed","message":"nope"}}`}}},
			wf.NodeFailed, "nope", []int{1, 1}, 0},
		{"no node passes to the next", [][]reply{{{200, `{}`}}, {{200, `{"node":{"phase":"Running"},"requeue":"1m"}`}}},
			wf.NodeRunning, "", []int{1, 1}, time.Minute},
		{"nobody runs it", [][]reply{{{200, `{}`}}}, wf.NodeFailed, "no plugin executed the template", []int{1}, 0},
		{"an error fails the node", [][]reply{{{500, "boom"}}}, wf.NodeFailed, "500 Internal Server Error: boom", []int{1}, 0},
		{"a bad reply fails the node", [][]reply{{{200, `not json`}}}, wf.NodeFailed, "decode the reply", []int{1}, 0},
		{"no plugins installed", nil, wf.NodeFailed, "no executor plugin is installed", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestAgent(clock.RealClock{})
			var servers []*pluginServer
			for i, r := range tt.plugins {
				s := newPluginServer(t, r...)
				servers = append(servers, s)
				a.Plugins = append(a.Plugins, &Plugin{Name: "p" + string(rune('0'+i)), Address: s.URL, Token: "tok" + string(rune('0'+i))})
			}
			got, requeue := a.runPlugin(context.Background(), json.RawMessage(pluginTemplate), a.Log)
			if got.Phase != tt.wantPhase || !strings.Contains(got.Message, tt.wantMessage) || requeue != tt.wantRequeue {
				t.Errorf("result = %+v requeue %s, want %s %q requeue %s", got, requeue, tt.wantPhase, tt.wantMessage, tt.wantRequeue)
			}
			for i, s := range servers {
				if s.count() != tt.wantCalls[i] {
					t.Errorf("plugin %d called %d times, want %d", i, s.count(), tt.wantCalls[i])
				}
				for j := range s.calls {
					if s.auth[j] != "Bearer tok"+string(rune('0'+i)) || s.paths[j] != "POST /api/v1/template.execute application/json" {
						t.Errorf("plugin %d call: %s, %s", i, s.paths[j], s.auth[j])
					}
					var args struct {
						Workflow struct {
							Metadata struct{ Name string } `json:"metadata"`
						} `json:"workflow"`
						Template json.RawMessage `json:"template"`
					}
					if err := json.Unmarshal([]byte(s.calls[j]), &args); err != nil || args.Workflow.Metadata.Name != "wf" {
						t.Errorf("plugin %d body %s: %v", i, s.calls[j], err)
					}
					var compact bytes.Buffer
					_ = json.Compact(&compact, args.Template)
					if compact.String() != pluginTemplate {
						t.Errorf("plugin %d got template %s, want it as the controller wrote it", i, args.Template)
					}
				}
			}
		})
	}
}

// TestRunPluginNotFoundIsRemembered: a plugin that answered 404 is not asked again.
func TestRunPluginNotFoundIsRemembered(t *testing.T) {
	s := newPluginServer(t, reply{404, ""})
	a := newTestAgent(clock.RealClock{})
	a.Plugins = []*Plugin{{Name: "p", Address: s.URL}}
	for range 2 {
		a.runPlugin(context.Background(), json.RawMessage(pluginTemplate), a.Log)
	}
	if s.count() != 1 {
		t.Errorf("called %d times, want 1", s.count())
	}
}

// TestRunPluginRetriesWhileStarting: a 503 (the sidecar is starting) is
// retried on the agent's clock, and the reply after it counts.
func TestRunPluginRetriesWhileStarting(t *testing.T) {
	s := newPluginServer(t, reply{503, "starting"}, reply{200, `{"node":{"phase":"Succeeded"}}`})
	clk := clocktesting.NewFakeClock(time.Now())
	a := newTestAgent(clk)
	a.Plugins = []*Plugin{{Name: "p", Address: s.URL}}
	done := make(chan wf.NodeResult, 1)
	go func() {
		n, _ := a.runPlugin(context.Background(), json.RawMessage(pluginTemplate), a.Log)
		done <- n
	}()
	for s.count() < 2 {
		select {
		case n := <-done:
			t.Fatalf("returned after %d calls: %+v", s.count(), n)
		default:
		}
		// Past the call's own timeout timer, step the backoff's delay.
		clk.Step(2 * time.Second)
		time.Sleep(time.Millisecond)
	}
	if n := <-done; n.Phase != wf.NodeSucceeded {
		t.Errorf("result = %+v", n)
	}
}

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	random := bytes.NewReader(bytes.Repeat([]byte{255, 0, 37, 71}, 64)) // 255 is rejected (bias)
	if err := WriteTokens(dir, []string{"hello", "world"}, random); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hello", "world"} {
		b, err := os.ReadFile(TokenFile(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != TokenLength || strings.Trim(string(b), tokenLetters) != "" {
			t.Errorf("token %q: want %d of %s", b, TokenLength, tokenLetters)
		}
		if st, _ := os.Stat(TokenFile(dir, name)); st.Mode().Perm() != 0o440 {
			t.Errorf("token mode %v, want 0440", st.Mode().Perm())
		}
	}
	ps, err := ReadTokens(dir, []string{"world"}, []string{"http://localhost:4355"})
	if err != nil || len(ps) != 1 || ps[0].Address != "http://localhost:4355" || len(ps[0].Token) != TokenLength {
		t.Errorf("ReadTokens = %+v, %v", ps, err)
	}
	for _, tt := range []struct {
		name    string
		err     error
		wantErr string
	}{
		{"bad name", WriteTokens(dir, []string{"../x"}, random), `plugin name "../x" is not a container name`},
		{"no token", func() error { _, err := ReadTokens(dir, []string{"other"}, []string{"a"}); return err }(), "`argoexec agent init`, the agent pod's init container, writes it"},
		{"counts differ", func() error { _, err := ReadTokens(dir, []string{"hello"}, nil); return err }(), "1 plugin names (ARGO_PLUGIN_NAMES) but 0 addresses"},
		{"no randomness", WriteTokens(filepath.Join(dir, "new"), []string{"p"}, bytes.NewReader(nil)), "make the token of plugin p"},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.wantErr) {
			t.Errorf("%s: err = %v, want %q", tt.name, tt.err, tt.wantErr)
		}
	}
}
