package podexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/streaming/pkg/httpstream"
)

// warnHook records warnings and closes warned at the first.
type warnHook struct {
	warned chan struct{}
	msgs   []string
}

func (h *warnHook) Levels() []logrus.Level { return []logrus.Level{logrus.WarnLevel} }

func (h *warnHook) Fire(e *logrus.Entry) error {
	if len(h.msgs) == 0 {
		close(h.warned)
	}
	h.msgs = append(h.msgs, fmt.Sprintf("%s: %v", e.Message, e.Data[logrus.ErrorKey]))
	return nil
}

// TestWaitWarnsWhenExecRefused: an exec fast path refused for lack of RBAC
// does not fail Wait (the status still shows the exit), but it is a warning
// carrying the refusal, which names the grant; other fast-path failures stay
// at debug.
func TestWaitWarnsWhenExecRefused(t *testing.T) {
	refused := &httpstream.UpgradeFailureError{Cause: &UpgradeRefusedError{StatusCode: http.StatusForbidden, Err: errors.New(`cannot create resource "pods/exec"`)}}
	for _, tc := range []struct {
		name     string
		execErr  error
		wantWarn bool
	}{
		{name: "403", execErr: refused, wantWarn: true},
		{name: "no shell", execErr: errors.New("exec: sh: not found")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakePod("main")
			ex := &fakeExecer{run: func(context.Context, string, []string, io.Reader, io.Writer, io.Writer) error { return tc.execErr }}
			e, _ := newTestEngine(ex, p)
			hook := &warnHook{warned: make(chan struct{})}
			e.cfg.Log.Logger.AddHook(hook)
			done := waitAsync(e, "main")
			waitFollowing(p, 1)
			if tc.wantWarn {
				select { // the refusal is judged before main's exit shows
				case <-hook.warned:
				case <-time.After(10 * time.Second): // a guard against a hang, not a timing gate
					t.Fatal("no warning 10 s after the exec fast path was refused")
				}
			}
			p.report("main", 0)
			if err := <-done; err != nil {
				t.Fatalf("Wait = %v, want nil: the status shows the exit", err)
			}
			if got := len(hook.msgs) > 0; got != tc.wantWarn {
				t.Fatalf("warnings %q, want a warning: %v", hook.msgs, tc.wantWarn)
			}
			if tc.wantWarn && (!strings.Contains(hook.msgs[0], "exec fast path refused") || !strings.Contains(hook.msgs[0], `"pods/exec"`)) {
				t.Errorf("warning %q does not say the fast path was refused and why", hook.msgs[0])
			}
		})
	}
}
