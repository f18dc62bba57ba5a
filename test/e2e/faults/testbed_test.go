//go:build e2e

package faults

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// testbed drives hack/cluster.sh: one component at a time, each fault undone when the test
// ends (hack/e2e.sh also runs `cluster.sh up` after the exclusive run, whatever happened).
type testbed struct{ script string }

func newTestbed() testbed {
	return testbed{script: filepath.Join(framework.RepoRoot(), "hack", "cluster.sh")}
}

// run runs hack/cluster.sh with args, bounded, and fails the test on error.
func (tb testbed) run(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, tb.script, args...).CombinedOutput()
	t.Logf("hack/cluster.sh %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), bytes.TrimSpace(out))
	if err != nil {
		t.Fatalf("hack/cluster.sh %s: %v", strings.Join(args, " "), err)
	}
}

// kill SIGKILLs the component; `up` restarts it, at the latest when the test ends.
func (tb testbed) kill(t *testing.T, component string) {
	t.Helper()
	t.Cleanup(func() { tb.run(t, "up", component) })
	tb.run(t, "kill", component)
}

// stop stops the component as its own SIGTERM handler does (graceful).
func (tb testbed) stop(t *testing.T, component string) {
	t.Helper()
	t.Cleanup(func() { tb.run(t, "up", component) })
	tb.run(t, "down", component)
}

func (tb testbed) up(t *testing.T, component string) { t.Helper(); tb.run(t, "up", component) }

// pause SIGSTOPs the component; resume (at the latest when the test ends) SIGCONTs it.
func (tb testbed) pause(t *testing.T, component string) {
	t.Helper()
	t.Cleanup(func() { tb.run(t, "resume", component) })
	tb.run(t, "pause", component)
}

func (tb testbed) resume(t *testing.T, component string) { t.Helper(); tb.run(t, "resume", component) }

// etcdCompact moves etcd's revision on (three writes to a key outside the API server's
// /registry) and compacts its history up to there (etcd's JSON gateway). Called while the API
// server is down, it makes the restarted server's watch cache start past every resourceVersion
// a client saw before, so a watch resumed from one is answered 410 Gone. (Without the writes
// nothing moves the revision while the API server is down, and a client whose last version
// is the current revision, as a bookmark leaves it, resumes with no 410.)
func etcdCompact(ctx context.Context, t *testing.T) int64 {
	t.Helper()
	post := func(path string, body any, out any) {
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:2379"+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("etcd %s: %v", path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("etcd %s: %s", path, resp.Status)
		}
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatalf("etcd %s: %v", path, err)
			}
		}
	}
	for i := range 3 {
		post("/v3/kv/put", map[string]string{
			"key":   base64.StdEncoding.EncodeToString([]byte("/argoexec-faults/revision")),
			"value": base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(i))),
		}, nil)
	}
	var r struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	post("/v3/kv/range", map[string]string{"key": "Lw=="}, &r) // key "/"
	rev, err := strconv.ParseInt(r.Header.Revision, 10, 64)
	if err != nil {
		t.Fatalf("etcd revision %q: %v", r.Header.Revision, err)
	}
	post("/v3/kv/compaction", map[string]any{"revision": fmt.Sprint(rev), "physical": true}, nil)
	return rev
}
