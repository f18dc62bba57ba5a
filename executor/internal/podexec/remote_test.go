package podexec

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// TestRemoteExecerRefused: a server that refuses every upgrade with 403 is
// tried with SPDY (POST) and then WebSocket (GET), and the error is
// recognised as forbidden and carries both refusals.
func TestRemoteExecerRefused(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods = append(methods, r.Method)
		mu.Unlock()
		if got := r.URL.Query()["command"]; strings.Join(got, " ") != "cat -- /tmp/a b" {
			t.Errorf("command = %q", got)
		}
		st := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/exec"}, "wf-1", errors.New("no"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(st.ErrStatus)
	}))
	defer srv.Close()
	ex := &RemoteExecer{
		Config: &rest.Config{Host: srv.URL},
		URL: func(req ExecRequest) (*url.URL, error) {
			u, _ := url.Parse(srv.URL + "/exec/" + req.Container)
			q := url.Values{"command": req.Command}
			if req.Stdout {
				q.Set("output", "1")
			}
			u.RawQuery = q.Encode()
			return u, nil
		},
	}
	err := ex.Exec(context.Background(), "main", []string{"cat", "--", "/tmp/a b"}, nil, io.Discard, nil)
	if err == nil {
		t.Fatal("Exec = nil, want an error")
	}
	if !IsForbidden(err) {
		t.Errorf("IsForbidden(%v) = false", err)
	}
	for _, w := range []string{"SPDY", "WebSocket"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %s", err, w)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(methods, ",") != "POST,GET" {
		t.Errorf("requests = %v, want SPDY (POST) then WebSocket (GET)", methods)
	}
}

func TestIsForbidden(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/exec"}, "p", errors.New("no"))
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"status error", forbidden, true},
		{"spdy 403", &httpstream.UpgradeFailureError{Cause: &UpgradeRefusedError{StatusCode: 403, Err: errors.New("x")}}, true},
		{"spdy 500", &httpstream.UpgradeFailureError{Cause: &UpgradeRefusedError{StatusCode: 500, Err: errors.New("x")}}, false},
		{"websocket status", &httpstream.UpgradeFailureError{Cause: forbidden}, true},
		{"wrapped", errors.Join(errors.New("a"), &UpgradeRefusedError{StatusCode: 403, Err: errors.New("x")}), true},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), false},
		{"other", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		if got := IsForbidden(tc.err); got != tc.want {
			t.Errorf("%s: IsForbidden = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// countingExecutor is a remotecommand.Executor that counts its sessions and
// returns err.
type countingExecutor struct {
	n   int
	err error
}

func (c *countingExecutor) Stream(remotecommand.StreamOptions) error { c.n++; return c.err }

func (c *countingExecutor) StreamWithContext(context.Context, remotecommand.StreamOptions) error {
	c.n++
	return c.err
}

// TestSPDYRefusalSticks: once SPDY was refused and WebSocket carried a
// session, later sessions skip SPDY; when WebSocket is refused as well,
// nothing sticks and both are tried again.
func TestSPDYRefusalSticks(t *testing.T) {
	refusedUpgrade := &httpstream.UpgradeFailureError{Cause: &UpgradeRefusedError{StatusCode: http.StatusBadRequest, Err: errors.New("proxy cannot carry SPDY")}}
	tests := []struct {
		name                 string
		spdyErr, wsErr       error
		wantSPDY, wantWS     int
		wantSticky, wantFail bool
	}{
		{name: "SPDY works", wantSPDY: 3, wantWS: 0},
		{name: "SPDY refused, WebSocket works", spdyErr: refusedUpgrade, wantSPDY: 1, wantWS: 3, wantSticky: true},
		{name: "WebSocket session fails after its upgrade", spdyErr: refusedUpgrade, wsErr: errors.New("stream reset"), wantSPDY: 1, wantWS: 3, wantSticky: true, wantFail: true},
		{name: "both refused", spdyErr: refusedUpgrade, wsErr: &httpstream.UpgradeFailureError{Cause: errors.New("403")}, wantSPDY: 3, wantWS: 3, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stats protocolStats
			spdyX, wsX := &countingExecutor{err: tt.spdyErr}, &countingExecutor{err: tt.wsErr}
			f := &spdyFirst{spdy: spdyX, ws: wsX, stats: &stats}
			for range 3 {
				err := f.StreamWithContext(context.Background(), remotecommand.StreamOptions{})
				if (err != nil) != tt.wantFail {
					t.Fatalf("StreamWithContext = %v, want failure %v", err, tt.wantFail)
				}
			}
			if spdyX.n != tt.wantSPDY || wsX.n != tt.wantWS || stats.refused.Load() != tt.wantSticky {
				t.Errorf("SPDY sessions %d, WebSocket %d, sticky %v; want %d, %d, %v",
					spdyX.n, wsX.n, stats.refused.Load(), tt.wantSPDY, tt.wantWS, tt.wantSticky)
			}
			// FellBack says so once, and only where WebSocket took over.
			r := &RemoteExecer{}
			r.stats.refused.Store(stats.refused.Load())
			if first, second := r.FellBack(), r.FellBack(); first != tt.wantSticky || second {
				t.Errorf("FellBack = %v, then %v; want %v, then false", first, second, tt.wantSticky)
			}
		})
	}
}
