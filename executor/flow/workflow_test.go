package flow_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/protocol/native"
	"github.com/argoexec/argoexec/executor/report"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/archive"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

func testLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// memStore is an in-memory S3 driver: objects by key. Tests hand the flows
// storeOf(m), a Store over it, so tarballs are unpacked as in a pod.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	putErr  error
}

func (m *memStore) Save(_ context.Context, local string, art wf.Artifact) (artifacts.Object, error) {
	key := art.S3.Key
	if m.putErr != nil {
		return artifacts.Object{}, m.putErr
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objects == nil {
		m.objects = map[string][]byte{}
	}
	if st, err := os.Stat(local); err == nil && st.IsDir() {
		// A directory as Argo's S3 driver stores one: a key per file.
		n := 0
		err := filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(local, p)
			m.objects[path.Join(key, filepath.ToSlash(rel))] = b
			n++
			return err
		})
		return artifacts.Object{Key: key, Files: n}, err
	}
	b, err := os.ReadFile(local)
	if err != nil {
		return artifacts.Object{}, err
	}
	m.objects[key] = b
	return artifacts.Object{Key: key, Size: int64(len(b)), Files: 1}, nil
}

func (m *memStore) Load(_ context.Context, art wf.Artifact, local string) error {
	key := art.S3.Key
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.objects[key]; ok {
		return os.WriteFile(local, b, 0o644)
	}
	found := false
	for k, b := range m.objects { // a directory: the keys under key/
		rel, ok := strings.CutPrefix(k, strings.TrimSuffix(key, "/")+"/")
		if !ok {
			continue
		}
		found = true
		p := filepath.Join(local, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	if !found {
		return fmt.Errorf("get %s: %w", key, artifacts.ErrNotFound)
	}
	return nil
}

// storeOf is a Store whose S3 driver is m, limited to repo()'s bucket.
func storeOf(m *memStore) *artifacts.Store {
	return artifacts.NewStore(artifacts.StoreConfig{Drivers: map[string]artifacts.Driver{wf.KindS3: m}, Allow: artifacts.RepositoryOnly(wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"})}, testLog())
}

// recorder is an OutputReporter that keeps what it was given.
type recorder struct {
	got *wf.NodeOutputs
	err error
}

func (r *recorder) Report(_ context.Context, o *wf.NodeOutputs) error {
	r.got = o
	return r.err
}

// repo is our controller's locator over a repository at s3:7070, bucket b.
func repo() flow.ArtifactLocator {
	return native.KeyFormatLocator{Repository: &wf.ArtifactRepository{S3: &wf.S3ArtifactRepository{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}}}}
}

// scriptTemplate: main mounts the volume "work" at /work.
func scriptTemplate() *wf.Template {
	return &wf.Template{
		Name: "t",
		Script: &wf.ScriptTemplate{
			Container: corev1.Container{Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}},
			Source:    "echo hi",
		},
	}
}

// mainFS makes a fake /mainctrfs with main's /work volume.
func mainFS(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, "work", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func logStream(s string) func(context.Context, string, bool) (io.ReadCloser, error) {
	return func(context.Context, string, bool) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(s)), nil
	}
}

func TestWaitCollectsAndReports(t *testing.T) {
	tmpl := scriptTemplate()
	tmpl.Outputs.Parameters = []wf.Parameter{
		{Name: "from-volume", ValueFrom: &wf.ValueFrom{Path: "/work/out.txt"}},
		{Name: "from-backend", ValueFrom: &wf.ValueFrom{Path: "/tmp/base.txt"}},
		{Name: "defaulted", Default: wf.AnyStringPtr("fallback"), ValueFrom: &wf.ValueFrom{Path: "/work/none.txt"}},
	}
	fake := &executortest.Fake{
		GetOutputStreamFunc: logStream("hello\n"),
		GetFileContentsFunc: func(_ context.Context, c, p string) (string, error) {
			if c != "main" || p != "/tmp/base.txt" {
				return "", fmt.Errorf("unexpected read %s:%s", c, p)
			}
			return "from base layer\n", nil
		},
	}
	rep := &recorder{}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Paths: flow.Paths{MainCtrFS: mainFS(t, map[string]string{"out.txt": "42\n"})}}, fake, nil, rep, testLog())
	if err := we.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	got := rep.got
	if got == nil {
		t.Fatal("nothing reported")
	}
	if got.Result == nil || *got.Result != "hello" || got.ResultTruncated {
		t.Errorf("result = %v truncated=%v", got.Result, got.ResultTruncated)
	}
	for _, c := range fake.Calls() {
		if strings.HasPrefix(c, "GetExitCode") {
			t.Errorf("wait called %s: the report must not wait for the exit code (the controller reads main's status)", c)
		}
	}
	if got.ExitCode != nil {
		t.Errorf("exitCode = %v reported", *got.ExitCode)
	}
	want := map[string]string{"from-volume": "42", "from-backend": "from base layer", "defaulted": "fallback"}
	for _, p := range got.Parameters {
		if p.Value == nil || string(*p.Value) != want[p.Name] {
			t.Errorf("parameter %s = %v, want %q", p.Name, p.Value, want[p.Name])
		}
		delete(want, p.Name)
	}
	if len(want) != 0 {
		t.Errorf("parameters not reported: %v", want)
	}
	calls := strings.Join(fake.Calls(), " ")
	if !strings.HasPrefix(calls, "Wait(main)") || strings.Contains(calls, "Kill") {
		t.Errorf("calls = %s; want Wait(main) first and no Kill in native sidecar mode", calls)
	}
}

func TestWaitMissingParameterFailsButReports(t *testing.T) {
	tmpl := scriptTemplate()
	tmpl.Outputs.Parameters = []wf.Parameter{
		{Name: "needed", ValueFrom: &wf.ValueFrom{Path: "/work/missing.txt"}},
		{Name: "fine", ValueFrom: &wf.ValueFrom{Path: "/work/ok.txt"}},
		{Name: "base-missing", ValueFrom: &wf.ValueFrom{Path: "/tmp/gone"}},
	}
	fake := &executortest.Fake{
		GetOutputStreamFunc: logStream(""),
		GetFileContentsFunc: func(_ context.Context, c, p string) (string, error) {
			return "", fmt.Errorf("container %s: %s: %w", c, p, fs.ErrNotExist)
		},
	}
	rep := &recorder{}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Paths: flow.Paths{MainCtrFS: mainFS(t, map[string]string{"ok.txt": "ok"})}}, fake, nil, rep, testLog())
	err := we.Wait(context.Background())
	for _, want := range []string{
		`collect output parameters: output parameter "needed": /work/missing.txt does not exist in container main and the parameter has no default`,
		`output parameter "base-missing": /tmp/gone does not exist`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to contain %q", err, want)
		}
	}
	if rep.got == nil || len(rep.got.Parameters) != 1 || rep.got.Parameters[0].Name != "fine" {
		t.Errorf("reported %+v; want the parameter that exists despite the failure", rep.got)
	}
}

func TestWaitResultKeepsTheTail(t *testing.T) {
	include, exclude := true, false
	tests := []struct {
		name          string
		tmpl          *wf.Template
		protocol      flow.Protocol
		log           string
		max           int
		wantResult    *string
		wantTruncated bool
		wantDropped   int64
		wantReplaced  *wf.ResultReplacement
		wantLog       []string // in wait's log
	}{
		{name: "short output whole, one trailing newline stripped", tmpl: scriptTemplate(), log: "a\n42\n\n", max: 100, wantResult: ptr("a\n42\n")},
		{name: "long output keeps the last bytes (the answer is printed last)", tmpl: scriptTemplate(),
			log: strings.Repeat("x", 300) + "answer\n", max: 100, wantResult: ptr(strings.Repeat("x", 94) + "answer"), wantTruncated: true, wantDropped: 206,
			wantLog: []string{"is 306 bytes", "keeps the last 100 and drops the first 206"}},
		// Argo strips the newline, then keeps the last 256 KiB: a result
		// over the limit is exactly the limit, and the log says so.
		{name: "over the limit: newline stripped first, then the limit kept (Argo)", tmpl: scriptTemplate(),
			log: strings.Repeat("y", 150) + "\n", max: 100, wantResult: ptr(strings.Repeat("y", 100)), wantTruncated: true, wantDropped: 50,
			wantLog: []string{"keeps the last 100 and drops the first 50"}},
		{name: "written in many small pieces", tmpl: scriptTemplate(), log: strings.Repeat("0123456789", 50), max: 25, wantResult: ptr("5678901234567890123456789"), wantTruncated: true, wantDropped: 475},
		{name: "the cut never splits a character", tmpl: scriptTemplate(), log: strings.Repeat("é", 100), max: 25, wantResult: ptr(strings.Repeat("é", 12)), wantTruncated: true, wantDropped: 176},
		{name: "bytes that are not UTF-8 are counted, with the first offset", tmpl: scriptTemplate(),
			log: "ok \xff\xfe then é and \x80\n", max: 100, wantResult: ptr("ok \xff\xfe then é and \x80"),
			wantReplaced: &wf.ResultReplacement{Bytes: 3, FirstOffset: 3},
			wantLog:      []string{"3 bytes that are not UTF-8", "offset 3 of main's output", "U+FFFD"}},
		{name: "the offset of a bad byte counts what the cut dropped", tmpl: scriptTemplate(),
			log: strings.Repeat("z", 200) + "ab\xffc\n", max: 10, wantResult: ptr(strings.Repeat("z", 6) + "ab\xffc"), wantTruncated: true, wantDropped: 194,
			wantReplaced: &wf.ResultReplacement{Bytes: 1, FirstOffset: 202}},
		{name: "a container template has no result by default", tmpl: &wf.Template{Container: &corev1.Container{}}, log: "x", max: 100},
		{name: "the protocol asks for a container's stdout (Argo)", tmpl: &wf.Template{Container: &corev1.Container{}},
			protocol: flow.Protocol{IncludeScriptOutput: &include}, log: "out\n", max: 100, wantResult: ptr("out")},
		{name: "the protocol does not ask for a script's (Argo)", tmpl: scriptTemplate(),
			protocol: flow.Protocol{IncludeScriptOutput: &exclude}, log: "out\n", max: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &executortest.Fake{GetOutputStreamFunc: func(context.Context, string, bool) (io.ReadCloser, error) {
				return io.NopCloser(iotest.OneByteReader(strings.NewReader(tt.log))), nil
			}}
			rep := &recorder{}
			log, hook := logtest.NewNullLogger()
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Template: tt.tmpl, Protocol: tt.protocol, MaxResultBytes: tt.max}, fake, nil, rep, logrus.NewEntry(log))
			if err := we.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := rep.got.Result
			if (got == nil) != (tt.wantResult == nil) || got != nil && *got != *tt.wantResult || rep.got.ResultTruncated != tt.wantTruncated {
				t.Errorf("result = %q truncated=%v; want %q truncated=%v", deref(got), rep.got.ResultTruncated, deref(tt.wantResult), tt.wantTruncated)
			}
			if rep.got.ResultDroppedBytes != tt.wantDropped {
				t.Errorf("resultDroppedBytes = %d, want %d", rep.got.ResultDroppedBytes, tt.wantDropped)
			}
			if !reflect.DeepEqual(rep.got.ResultReplaced, tt.wantReplaced) {
				t.Errorf("resultReplaced = %+v, want %+v", rep.got.ResultReplaced, tt.wantReplaced)
			}
			var logged strings.Builder
			for _, e := range hook.AllEntries() {
				logged.WriteString(e.Message + "\n")
			}
			for _, w := range tt.wantLog {
				if !strings.Contains(logged.String(), w) {
					t.Errorf("wait's log does not say %q:\n%s", w, logged.String())
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}

// TestWaitStopRequest: under Argo's controller SIGTERM is its stop command
// (kill -15 $(pidof argoexec)), so wait stops main and saves; its
// ARGO_DEADLINE bounds main like activeDeadlineSeconds.
// logChecking is a fake backend whose log may lack main's last output.
// settle, when set, answers SettleLog; unset, the log has settled.
type logChecking struct {
	*executortest.Fake
	why    string
	err    error
	settle func(known time.Time) (time.Time, bool, error)
}

func (l logChecking) LogIncomplete(context.Context, string) (string, error) { return l.why, l.err }

func (l logChecking) SettleLog(_ context.Context, _ string, known time.Time) (time.Time, bool, error) {
	if l.settle == nil {
		return known, true, nil
	}
	return l.settle(known)
}

// TestWaitResultLogGrew: a log whose end moves while it is read is read
// again, up to three times; one still growing then is reported as read and
// marked incomplete, saying why; a settle check that fails is said and the
// log is read once.
func TestWaitResultLogGrew(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		// logs are what each read of main's log gives, the last repeated.
		logs []string
		// ends are what each SettleLog call finds, the last repeated.
		ends       []time.Time
		settleErr  error
		wantResult string
		wantReads  int
		wantWhy    string // in resultIncomplete; "" wants none
		wantLog    string
	}{
		{name: "settled", logs: []string{"42\n"}, ends: []time.Time{t0}, wantResult: "42", wantReads: 1},
		{name: "grew once", logs: []string{"4", "42\n"}, ends: []time.Time{t0, t0.Add(time.Second)}, wantResult: "42", wantReads: 2,
			wantLog: "main's log grew while it was read"},
		{name: "still growing", logs: []string{"4", "42", "42\n"}, ends: []time.Time{t0, t0.Add(1), t0.Add(2), t0.Add(3), t0.Add(4), t0.Add(5), t0.Add(6)},
			wantResult: "42", wantReads: 3, wantWhy: "main's log was still growing after main exited: it was read 3 times"},
		{name: "settle check failed", logs: []string{"42\n"}, settleErr: errors.New("503"), wantResult: "42", wantReads: 1,
			wantLog: "could not check that main's log has stopped growing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reads, settles := 0, 0
			fake := &executortest.Fake{GetOutputStreamFunc: func(context.Context, string, bool) (io.ReadCloser, error) {
				reads++
				return io.NopCloser(strings.NewReader(tt.logs[min(reads, len(tt.logs))-1])), nil
			}}
			settle := func(known time.Time) (time.Time, bool, error) {
				if tt.settleErr != nil {
					return time.Time{}, false, tt.settleErr
				}
				settles++
				end := tt.ends[min(settles, len(tt.ends))-1]
				return end, true, nil
			}
			rep := &recorder{}
			log, hook := logtest.NewNullLogger()
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Template: scriptTemplate(), MaxResultBytes: 100}, logChecking{Fake: fake, settle: settle}, nil, rep, logrus.NewEntry(log))
			if err := we.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r := rep.got.Result; r == nil || *r != tt.wantResult {
				t.Errorf("result = %q, want %q", deref(r), tt.wantResult)
			}
			if reads != tt.wantReads {
				t.Errorf("main's log read %d times, want %d", reads, tt.wantReads)
			}
			if got := rep.got.ResultIncomplete; (tt.wantWhy == "") != (got == "") || !strings.Contains(got, tt.wantWhy) {
				t.Errorf("resultIncomplete = %q, want %q", got, tt.wantWhy)
			}
			var logged strings.Builder
			for _, e := range hook.AllEntries() {
				logged.WriteString(e.Message + " " + fmt.Sprint(e.Data["error"]) + "\n")
			}
			if tt.wantLog != "" && !strings.Contains(logged.String(), tt.wantLog) {
				t.Errorf("wait's log does not say %q:\n%s", tt.wantLog, logged.String())
			}
		})
	}
}

// TestWaitResultIncomplete: a backend that says main's log may lack its
// end gets the result marked, with the reason, and a warning; a check that
// fails is said and changes nothing.
func TestWaitResultIncomplete(t *testing.T) {
	for _, tt := range []struct {
		name, why string
		err       error
		wantLog   string
	}{
		{name: "complete"},
		{name: "incomplete", why: "the runtime was down", wantLog: "the result may be incomplete: the runtime was down"},
		{name: "check failed", err: errors.New("503"), wantLog: "could not check that main's log reaches main's exit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := &executortest.Fake{GetOutputStreamFunc: func(context.Context, string, bool) (io.ReadCloser, error) {
				return io.NopCloser(strings.NewReader("42\n")), nil
			}}
			rep := &recorder{}
			log, hook := logtest.NewNullLogger()
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Template: scriptTemplate(), MaxResultBytes: 100}, logChecking{Fake: fake, why: tt.why, err: tt.err}, nil, rep, logrus.NewEntry(log))
			if err := we.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r := rep.got.Result; r == nil || *r != "42" {
				t.Errorf("result = %q, want the log as read", deref(r))
			}
			if rep.got.ResultIncomplete != tt.why {
				t.Errorf("resultIncomplete = %q, want %q", rep.got.ResultIncomplete, tt.why)
			}
			var logged strings.Builder
			for _, e := range hook.AllEntries() {
				logged.WriteString(e.Message + " " + fmt.Sprint(e.Data["error"]) + "\n")
			}
			if tt.wantLog != "" && !strings.Contains(logged.String(), tt.wantLog) {
				t.Errorf("wait's log does not say %q:\n%s", tt.wantLog, logged.String())
			}
		})
	}
}

func TestWaitStopRequest(t *testing.T) {
	sixty := int64(60)
	tests := []struct {
		name     string
		protocol flow.Protocol
		deadline *int64        // the template's activeDeadlineSeconds
		after    time.Duration // on the clock, before the signal
		cancel   bool
		wantErr  string
		wantNot  string
		wantKill bool
	}{
		{name: "Argo's stop command stops main, then saves", protocol: flow.Protocol{SignalStopsMain: true}, cancel: true,
			wantErr: "sent by the controller to stop the step, or by the kubelet stopping the pod", wantKill: true},
		// The kubelet enforces the pod's activeDeadlineSeconds with SIGTERM:
		// the message must not blame the controller.
		{name: "a signal when the pod's deadline runs out names the kubelet", protocol: flow.Protocol{SignalStopsMain: true},
			deadline: &sixty, after: 59 * time.Second, cancel: true, wantKill: true,
			wantErr: "when the pod's activeDeadlineSeconds (60s, from the template) ran out: most likely the kubelet", wantNot: "stopped by the controller"},
		{name: "a signal well before the pod's deadline names both senders", protocol: flow.Protocol{SignalStopsMain: true},
			deadline: &sixty, after: 5 * time.Second, cancel: true, wantKill: true,
			wantErr: "or by the kubelet stopping the pod", wantNot: "most likely"},
		{name: "our SIGTERM leaves main to the kubelet", cancel: true, wantErr: "interrupted"},
		{name: "Argo's deadline stops main", protocol: flow.Protocol{Deadline: time.Now().Add(50 * time.Millisecond)},
			wantErr: "main exceeded the workflow's deadline", wantKill: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			killed := false
			clk := clocktesting.NewFakeClock(time.Now())
			fake := &executortest.Fake{
				WaitFunc: func(wctx context.Context, _ []string) error {
					clk.Step(tt.after)
					if tt.cancel {
						cancel()
					}
					<-wctx.Done()
					return wctx.Err()
				},
				KillFunc: func(kctx context.Context, names []string, _ time.Duration) error {
					killed = kctx.Err() == nil && len(names) == 1 && names[0] == "main"
					return nil
				},
			}
			rep := &recorder{}
			tmpl := &wf.Template{Container: &corev1.Container{}, ActiveDeadlineSeconds: tt.deadline}
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Template: tmpl, Protocol: tt.protocol, Clock: clk}, fake, nil, rep, testLog())
			err := we.Wait(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if err != nil && tt.wantNot != "" && strings.Contains(err.Error(), tt.wantNot) {
				t.Errorf("err = %v; it must not say %q", err, tt.wantNot)
			}
			if killed != tt.wantKill {
				t.Errorf("main killed = %v, want %v", killed, tt.wantKill)
			}
			if rep.got == nil {
				t.Error("nothing reported")
			}
		})
	}
}

func TestWaitResultFallsBackToCombinedLog(t *testing.T) {
	fake := &executortest.Fake{GetOutputStreamFunc: func(_ context.Context, _ string, combined bool) (io.ReadCloser, error) {
		if !combined {
			return nil, executor.NotSupported("k8sapi", "stdout alone", "pods/log always interleaves stderr")
		}
		return io.NopCloser(strings.NewReader("both\n")), nil
	}}
	rep := &recorder{}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Template: scriptTemplate()}, fake, nil, rep, testLog())
	if err := we.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *rep.got.Result != "both" {
		t.Errorf("result = %q", *rep.got.Result)
	}
}

func TestWaitArtifacts(t *testing.T) {
	tmpl := scriptTemplate()
	tmpl.Outputs.Artifacts = []wf.Artifact{
		{Name: "dir", Path: "/work/outdir"},
		{Name: "raw", Path: "/work/outdir/a.txt", Archive: &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}},
		{Name: "base", Path: "/tmp/base"},
		{Name: "maybe", Path: "/work/nothing", Optional: true},
		{Name: "required", Path: "/work/nothing"},
	}
	fake := &executortest.Fake{
		CopyFileFunc: func(_ context.Context, c, src, dest string, level int) error {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			tw := tar.NewWriter(zw)
			tw.WriteHeader(&tar.Header{Name: "base", Mode: 0o644, Size: 4, Typeflag: tar.TypeReg})
			tw.Write([]byte("base"))
			tw.Close()
			zw.Close()
			return os.WriteFile(dest, buf.Bytes(), 0o644)
		},
	}
	store := &memStore{}
	rep := &recorder{}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{
		Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Step: flow.StepRef{Workflow: "wf", Pod: "pod"}, Paths: flow.Paths{MainCtrFS: mainFS(t, map[string]string{"outdir/a.txt": "A", "outdir/sub/b.txt": "B"})},
	}, fake, storeOf(store), rep, testLog())
	err := we.Wait(context.Background())
	if err == nil || !strings.Contains(err.Error(), `output artifact "required" (/work/nothing)`) || strings.Contains(err.Error(), `"maybe"`) {
		t.Fatalf("err = %v; want only the required missing artifact named", err)
	}
	var keys []string
	for k := range store.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "wf/pod/base.tgz,wf/pod/dir.tgz,wf/pod/raw.tgz" {
		t.Fatalf("uploaded %v", keys)
	}
	if string(store.objects["wf/pod/raw.tgz"]) != "A" {
		t.Errorf("archive: none uploaded %q, want the raw file", store.objects["wf/pod/raw.tgz"])
	}
	// The directory round-trips through init's unpacking.
	x := t.TempDir()
	if err := archive.Extract(context.Background(), bytes.NewReader(store.objects["wf/pod/dir.tgz"]), x); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(x, "outdir/sub/b.txt")); string(b) != "B" {
		t.Errorf("outdir/sub/b.txt = %q", b)
	}
	if len(rep.got.Artifacts) != 3 || rep.got.Artifacts[0].S3 == nil || rep.got.Artifacts[0].S3.Key != "wf/pod/dir.tgz" || rep.got.Artifacts[0].S3.Bucket != "b" {
		t.Errorf("reported artifacts %+v", rep.got.Artifacts)
	}
}

func TestWaitArtifactsNeedRepository(t *testing.T) {
	tmpl := scriptTemplate()
	tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "a", Path: "/work/a"}}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl}, &executortest.Fake{}, nil, &recorder{}, testLog())
	err := we.Wait(context.Background())
	if err == nil || !strings.Contains(err.Error(), "output artifacts a need an artifact repository: set artifactRepository.s3") {
		t.Fatalf("err = %v", err)
	}
}

func TestWaitLegacySidecarsAreKilled(t *testing.T) {
	var killed []string
	fake := &executortest.Fake{
		ListContainerNamesFunc: func(context.Context) ([]string, error) {
			return []string{"init", "main", "wait", "sidecar-b", "sidecar-a"}, nil
		},
		KillFunc: func(_ context.Context, names []string, _ time.Duration) error {
			killed = names
			return fmt.Errorf("container %q: %w", "sidecar-b", executor.ErrPID1Survived)
		},
	}
	tmpl := &wf.Template{Container: &corev1.Container{Image: "busybox"}}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, SidecarMode: wf.SidecarModeLegacy}, fake, nil, &recorder{}, testLog())
	err := we.Wait(context.Background())
	if strings.Join(killed, ",") != "sidecar-a,sidecar-b" {
		t.Errorf("killed %v", killed)
	}
	if !errors.Is(err, executor.ErrPID1Survived) || !strings.Contains(err.Error(), `stop sidecars: container "sidecar-b"`) {
		t.Errorf("err = %v; want the survivor reported by name", err)
	}
}

// TestWaitContainerSet: a containerSet's containers are all main ones, as
// in Argo v3.3.8: wait waits for every one of them (a sequence with no
// container called main would otherwise wait forever, and outputs on a
// shared volume would be read before the container that writes them
// ended), and the legacy sidecar stop leaves them alone.
func TestWaitContainerSet(t *testing.T) {
	var waited, killed []string
	fake := &executortest.Fake{
		WaitFunc: func(_ context.Context, names []string) error { waited = names; return nil },
		ListContainerNamesFunc: func(context.Context) ([]string, error) {
			return []string{"init", "a", "b", "main", "wait", "sidecar"}, nil
		},
		KillFunc: func(_ context.Context, names []string, _ time.Duration) error { killed = names; return nil },
	}
	tmpl := &wf.Template{ContainerSet: &wf.ContainerSetTemplate{
		Containers: []wf.ContainerNode{
			{Container: corev1.Container{Name: "a"}},
			{Container: corev1.Container{Name: "b"}, Dependencies: []string{"a"}},
			{Container: corev1.Container{Name: "main"}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "workspace", MountPath: "/workspace"}},
	}}
	// written by a, read from the set's shared volume as Argo's controller mirrors it into wait
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "out", ValueFrom: &wf.ValueFrom{Path: "/workspace/out"}}}
	ctrfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ctrfs, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctrfs, "workspace", "out"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &recorder{}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, SidecarMode: wf.SidecarModeLegacy, Paths: flow.Paths{MainCtrFS: ctrfs}}, fake, nil, rep, testLog())
	if err := we.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if rep.got == nil || len(rep.got.Parameters) != 1 || rep.got.Parameters[0].Value == nil || *rep.got.Parameters[0].Value != "hi" {
		t.Errorf("reported %+v, want parameter out = hi from the set's shared volume", rep.got)
	}
	if got := strings.Join(waited, ","); got != "a,b,main" {
		t.Errorf("waited for %s, want a,b,main", got)
	}
	if got := strings.Join(killed, ","); got != "sidecar" {
		t.Errorf("stopped %s as sidecars, want sidecar alone", got)
	}
}

// TestWaitLegacySidecarNotStartedYet: a sidecar of the template that the
// backend does not list yet (emissary lists the wrappers that started; the
// kubelet may start a sidecar after main has exited) is stopped too.
func TestWaitLegacySidecarNotStartedYet(t *testing.T) {
	var killed []string
	fake := &executortest.Fake{
		ListContainerNamesFunc: func(context.Context) ([]string, error) { return []string{"main", "early"}, nil },
		KillFunc: func(_ context.Context, names []string, _ time.Duration) error {
			killed = names
			return nil
		},
	}
	tmpl := &wf.Template{Container: &corev1.Container{Image: "busybox"}, Sidecars: []wf.UserContainer{
		{Container: corev1.Container{Name: "early"}}, {Container: corev1.Container{Name: "late"}}}}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, SidecarMode: wf.SidecarModeLegacy}, fake, nil, &recorder{}, testLog())
	if err := we.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if got := strings.Join(killed, ","); got != "early,late" {
		t.Errorf("stopped %s, want early,late", got)
	}
}

// TestWaitLegacySidecarSurvivorUnderArgo: under Argo's protocol a sidecar
// that survives its stop is a warning naming it (Argo's controller then
// runs the pod's kill-cmd annotation, and Argo's argoexec exits 0); any
// other failure to stop one still fails the step.
func TestWaitLegacySidecarSurvivorUnderArgo(t *testing.T) {
	survived := fmt.Errorf("container %q: %w", "sidecar-b", executor.ErrPID1Survived)
	other := errors.New(`signal container "sidecar-a": exec refused`)
	for _, tt := range []struct {
		name     string
		killErr  error
		wantErr  string // "" means no error
		wantWarn bool
	}{
		{name: "survivor only: a warning", killErr: survived, wantWarn: true},
		{name: "survivor and another failure: the other fails the step", killErr: errors.Join(other, survived), wantErr: "exec refused", wantWarn: true},
		{name: "another failure alone fails the step", killErr: other, wantErr: "exec refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := &executortest.Fake{
				ListContainerNamesFunc: func(context.Context) ([]string, error) {
					return []string{"main", "wait", "sidecar-a", "sidecar-b"}, nil
				},
				KillFunc: func(context.Context, []string, time.Duration) error { return tt.killErr },
			}
			log, hook := logtest.NewNullLogger()
			tmpl := &wf.Template{Container: &corev1.Container{Image: "busybox"}}
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Template: tmpl, SidecarMode: wf.SidecarModeLegacy,
				Protocol: flow.Protocol{SidecarSurvivorsWarn: true}}, fake, nil, &recorder{}, logrus.NewEntry(log))
			err := we.Wait(context.Background())
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Wait = %v, want error %q", err, tt.wantErr)
			}
			if err != nil && errors.Is(err, executor.ErrPID1Survived) {
				t.Errorf("Wait = %v; the survivor must be a warning, not the error", err)
			}
			warned := false
			for _, e := range hook.AllEntries() {
				if e.Level == logrus.WarnLevel && strings.Contains(fmt.Sprint(e.Data[logrus.ErrorKey]), `"sidecar-b"`) && strings.Contains(e.Message, "kill-cmd") {
					warned = true
				}
			}
			if warned != tt.wantWarn {
				t.Errorf("warning naming sidecar-b logged = %v, want %v", warned, tt.wantWarn)
			}
		})
	}
}

func TestWaitDeadlineStopsMainAndSaves(t *testing.T) {
	deadline := int64(1)
	tmpl := &wf.Template{Container: &corev1.Container{Image: "busybox"}, ActiveDeadlineSeconds: &deadline}
	var killedMain bool
	fake := &executortest.Fake{
		WaitFunc: func(ctx context.Context, _ []string) error { <-ctx.Done(); return ctx.Err() },
		KillFunc: func(ctx context.Context, names []string, _ time.Duration) error {
			killedMain = len(names) == 1 && names[0] == "main" && ctx.Err() == nil
			return nil
		},
	}
	rep := &recorder{}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl}, fake, nil, rep, testLog())
	err := we.Wait(context.Background())
	if err == nil || !strings.Contains(err.Error(), "main exceeded the template's activeDeadlineSeconds (1s)") {
		t.Fatalf("err = %v", err)
	}
	if !killedMain {
		t.Error("main was not killed with a live context")
	}
	if rep.got == nil {
		t.Errorf("outputs not saved after the deadline")
	}
}

func TestWaitInterruptedStillReports(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	killed := false
	fake := &executortest.Fake{
		WaitFunc: func(ctx context.Context, _ []string) error { cancel(); <-ctx.Done(); return ctx.Err() },
		KillFunc: func(context.Context, []string, time.Duration) error { killed = true; return nil },
	}
	rep := &recorder{}
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Template: &wf.Template{Container: &corev1.Container{}}}, fake, nil, rep, testLog())
	err := we.Wait(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("err = %v", err)
	}
	if rep.got == nil {
		t.Error("nothing reported after interruption")
	}
	if killed {
		t.Error("wait killed main after SIGTERM; the kubelet stops it (from outside, which works on a PID 1 that ignores SIGTERM)")
	}
}

// blockUntilDone is a backend call that hangs until its context ends, as
// calls to a kubelet busy tearing the pod down were seen to.
func blockUntilDone(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

// TestWaitSavingIsBounded: while saving (after SIGTERM or the deadline),
// backend calls that hang cost the outputs they were collecting, never the
// report of the others, and Wait ends within SaveTimeout.
func TestWaitSavingIsBounded(t *testing.T) {
	const save, reserve = 600 * time.Millisecond, 200 * time.Millisecond
	deadline := int64(1)
	tests := []struct {
		name      string
		deadline  *int64
		interrupt bool
		wantErr   []string
	}{
		{name: "SIGTERM", interrupt: true, wantErr: []string{"interrupted", `output parameter "q"`}},
		{name: "deadline, stop main hangs", deadline: &deadline, wantErr: []string{"activeDeadlineSeconds", "stop main", `output parameter "q"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "work"), 0o755)
			os.WriteFile(filepath.Join(dir, "work", "p"), []byte("on a volume"), 0o644)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fake := &executortest.Fake{
				WaitFunc: func(ctx context.Context, _ []string) error {
					if tt.interrupt {
						cancel()
					}
					return blockUntilDone(ctx)
				},
				KillFunc:            func(ctx context.Context, _ []string, _ time.Duration) error { return blockUntilDone(ctx) },
				GetFileContentsFunc: func(ctx context.Context, _, _ string) (string, error) { return "", blockUntilDone(ctx) },
			}
			tmpl := &wf.Template{
				Container:             &corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}},
				ActiveDeadlineSeconds: tt.deadline,
				Outputs: wf.Outputs{Parameters: []wf.Parameter{
					{Name: "p", ValueFrom: &wf.ValueFrom{Path: "/work/p"}}, // from the mirror
					{Name: "q", ValueFrom: &wf.ValueFrom{Path: "/tmp/q"}},  // through the hanging backend
				}},
			}
			var reportCtxErr error
			rep := &ctxRecorder{check: func(ctx context.Context) { reportCtxErr = ctx.Err() }}
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Paths: flow.Paths{MainCtrFS: dir}, Timing: flow.Timing{SaveTimeout: save, ReportReserve: reserve}}, fake, nil, rep, testLog())
			start := time.Now()
			err := we.Wait(ctx)
			took := time.Since(start)
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err %v does not contain %q", err, w)
				}
			}
			if rep.got == nil || reportCtxErr != nil {
				t.Fatalf("report: outputs %+v, its context's error %v; want a report with time left", rep.got, reportCtxErr)
			}
			if len(rep.got.Parameters) != 1 || rep.got.Parameters[0].Name != "p" || string(*rep.got.Parameters[0].Value) != "on a volume" {
				t.Errorf("reported parameters %+v, want p from the volume", rep.got.Parameters)
			}
			limit := save + 2*time.Second // slack for a loaded machine; unbounded calls would hang
			if tt.deadline != nil {
				limit += time.Duration(*tt.deadline) * time.Second
			}
			if took > limit {
				t.Errorf("Wait took %s, want within %s", took, limit)
			}
		})
	}
}

// ctxRecorder is a reporter that records the outputs and lets the test look
// at the context it was given.
type ctxRecorder struct {
	got   *wf.NodeOutputs
	check func(context.Context)
}

func (r *ctxRecorder) Report(ctx context.Context, o *wf.NodeOutputs) error {
	r.check(ctx)
	r.got = o
	return nil
}

func TestCheckOutputsBudget(t *testing.T) {
	big := strings.Repeat("x", 300*1024)
	out := &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "small", Value: wf.AnyStringPtr("1")}, {Name: "huge", Value: wf.AnyStringPtr(big)}}}
	err := report.CheckOutputsBudget(out, len(big)+100, 200*1024)
	if err == nil || !strings.Contains(err.Error(), "the biggest is output parameter huge (307200 bytes)") || !strings.Contains(err.Error(), "output artifact") {
		t.Fatalf("err = %v", err)
	}
	if err := report.CheckOutputsBudget(out, 10, 200*1024); err != nil {
		t.Errorf("within budget: %v", err)
	}
}

func tgzOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestInit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			if r.Header.Get("X-Token") != "t" {
				http.Error(w, "no token", http.StatusForbidden)
				return
			}
			io.WriteString(w, "plain body")
		case "/broken":
			http.Error(w, "backend down", http.StatusBadGateway)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	store := &memStore{objects: map[string][]byte{
		"wf/p/file.tgz": tgzOf(t, map[string]string{"out.txt": "one file"}),
		"wf/p/dir.tgz":  tgzOf(t, map[string]string{"d/a": "A", "d/b": "B"}),
		"hostile.tgz":   tgzOf(t, map[string]string{"../../escape": "x"}),
	}}
	tmpl := scriptTemplate()
	tmpl.Script.Source = strings.Repeat("# long script\n", 200*1024/14)
	tmpl.Inputs.Artifacts = []wf.Artifact{
		{Name: "raw", Path: "/in/raw", Raw: &wf.RawArtifact{Data: "raw data"}},
		{Name: "file", Path: "/in/file", S3: &wf.S3Artifact{Key: "wf/p/file.tgz"}},
		{Name: "dir", Path: "/in/dir", S3: &wf.S3Artifact{Key: "wf/p/dir.tgz"}},
		{Name: "http", Path: "/in/http", HTTP: &wf.HTTPArtifact{URL: srv.URL + "/plain", Headers: []wf.Header{{Name: "X-Token", Value: "t"}}}},
		{Name: "optional", Path: "/in/opt", Optional: true, S3: &wf.S3Artifact{Key: "nope"}},
		{Name: "optional-http", Path: "/in/opt2", Optional: true, HTTP: &wf.HTTPArtifact{URL: srv.URL + "/missing"}},
		{Name: "broken", Path: "/in/broken", HTTP: &wf.HTTPArtifact{URL: srv.URL + "/broken"}},
		{Name: "hostile", Path: "/in/hostile", S3: &wf.S3Artifact{Key: "hostile.tgz"}},
		{Name: "elsewhere", Path: "/in/e", S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Bucket: "other"}, Key: "k"}},
	}
	varRun, inputs := t.TempDir(), t.TempDir()
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{StageScript: true, Artifacts: repo()}, Template: tmpl, Paths: flow.Paths{VarRunArgo: varRun, InputArtifacts: inputs}}, nil, storeOf(store), nil, testLog())
	err := we.Init(context.Background())
	for _, want := range []string{`input artifact "broken": http: GET ` + srv.URL + `/broken: 502 Bad Gateway: backend down`, `input artifact "hostile"`, "unsafe archive entry", `input artifact "elsewhere": s3://other/k`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to contain %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "optional") {
		t.Errorf("optional artifacts failed the step: %v", err)
	}
	check := func(rel, want string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(inputs, rel))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", rel, b, err, want)
		}
	}
	check("raw", "raw data")
	check("file", "one file")
	check("dir/a", "A")
	check("dir/b", "B")
	check("http", "plain body")
	b, err := os.ReadFile(filepath.Join(varRun, "staging", "script"))
	if err != nil || string(b) != tmpl.Script.Source {
		t.Errorf("staged script: %d bytes, %v; want the %d-byte source", len(b), err, len(tmpl.Script.Source))
	}
	if _, err := os.Stat(filepath.Join(inputs, "..", "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("hostile archive wrote outside: %v", err)
	}
}

// TestInitStagesScriptOnlyWhenTheProtocolSays: under our pod builder the
// script reaches main from its annotation, so init writes nothing; under
// Argo's (StageScript) init stages it.
func TestInitStagesScriptOnlyWhenTheProtocolSays(t *testing.T) {
	for _, stage := range []bool{false, true} {
		t.Run(fmt.Sprintf("StageScript=%v", stage), func(t *testing.T) {
			tmpl := scriptTemplate()
			varRun := t.TempDir()
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{StageScript: stage}, Template: tmpl, Paths: flow.Paths{VarRunArgo: varRun, InputArtifacts: t.TempDir()}}, nil, nil, nil, testLog())
			if err := we.Init(context.Background()); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(varRun, "staging", "script"))
			switch {
			case stage && (err != nil || string(b) != tmpl.Script.Source):
				t.Errorf("staged script = %q, %v; want the source", b, err)
			case !stage && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("init staged %q (%v); want nothing: main reads the script annotation", b, err)
			}
		})
	}
}

// TestArchiveProgress: an output archive that takes several intervals to
// write logs its growing size and a final line; a quick one logs nothing.
func TestArchiveProgress(t *testing.T) {
	tests := []struct {
		name      string
		chunks    int
		pause     time.Duration // fake time each chunk takes
		every     time.Duration
		wantLines bool
	}{
		{name: "slow copy", chunks: 4, pause: 60 * time.Millisecond, every: 50 * time.Millisecond, wantLines: true},
		{name: "quick copy", chunks: 1, every: time.Minute, wantLines: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := &wf.Template{Container: &corev1.Container{}, Outputs: wf.Outputs{Artifacts: []wf.Artifact{{Name: "big", Path: "/tmp/big"}}}}
			clk := clocktesting.NewFakeClock(time.Now())
			log, hook := logtest.NewNullLogger()
			fake := &executortest.Fake{
				CopyFileFunc: func(_ context.Context, _, _, dest string, _ int) error {
					f, err := os.Create(dest)
					if err != nil {
						return err
					}
					defer f.Close()
					var buf bytes.Buffer
					zw := gzip.NewWriter(&buf)
					tw := tar.NewWriter(zw)
					body := bytes.Repeat([]byte{'x'}, 64*1024)
					tw.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: int64(len(body) * tt.chunks), Typeflag: tar.TypeReg})
					for range tt.chunks {
						tw.Write(body)
						zw.Flush()
						f.Write(buf.Bytes()) // the archive grows on disk chunk by chunk
						buf.Reset()
						if tt.pause > 0 {
							// The copy takes pause: the progress ticker fires and logs
							// the archive's size before the next chunk is written.
							before := progressLines(hook)
							clk.Step(tt.pause)
							for deadline := time.Now().Add(10 * time.Second); progressLines(hook) == before && time.Now().Before(deadline); {
								runtime.Gosched()
							}
						}
					}
					tw.Close()
					zw.Close()
					_, err = f.Write(buf.Bytes())
					return err
				},
			}
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Clock: clk, Timing: flow.Timing{ProgressEvery: tt.every}},
				fake, storeOf(&memStore{}), &recorder{}, logrus.NewEntry(log))
			if err := we.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			var progress, finished int
			for _, e := range hook.AllEntries() {
				switch e.Message {
				case "archiving output in progress":
					progress++
					if e.Data["path"] != "/tmp/big" || e.Data["bytes"].(int64) <= 0 {
						t.Errorf("progress line %v: want the path and a size", e.Data)
					}
				case "archiving output finished":
					finished++
				}
			}
			if got := progress > 0 && finished == 1; got != tt.wantLines {
				t.Errorf("%d progress lines, %d final lines; want lines: %v", progress, finished, tt.wantLines)
			}
			if !tt.wantLines && progress+finished != 0 {
				t.Errorf("a quick copy logged %d progress lines", progress+finished)
			}
		})
	}
}

// TestWaitReportAfterLongCollection: outside the save path, collecting may
// take longer than SaveTimeout (a big artifact); the report's time starts
// when the report does, not when collecting did.
func TestWaitReportAfterLongCollection(t *testing.T) {
	tmpl := &wf.Template{Container: &corev1.Container{}, Outputs: wf.Outputs{Artifacts: []wf.Artifact{{Name: "big", Path: "/tmp/big"}}}}
	clk := clocktesting.NewFakeClock(time.Now())
	fake := &executortest.Fake{
		CopyFileFunc: func(_ context.Context, _, _, dest string, _ int) error {
			clk.SetTime(clk.Now().Add(time.Hour)) // a long copy
			return os.WriteFile(dest, tgzOf(t, map[string]string{"big": "data"}), 0o644)
		},
	}
	var deadline time.Time
	rep := &ctxRecorder{check: func(ctx context.Context) { deadline, _ = ctx.Deadline() }}
	save := 20 * time.Second
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Clock: clk, Timing: flow.Timing{SaveTimeout: save}},
		fake, storeOf(&memStore{}), rep, testLog())
	if err := we.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(save); rep.got == nil || len(rep.got.Artifacts) != 1 || !deadline.Equal(want) {
		t.Errorf("report: outputs %+v, deadline %v; want the artifact reported by %v (SaveTimeout after the copy ended)", rep.got, deadline, want)
	}
}

func TestWaitParameters(t *testing.T) {
	tests := []struct {
		name      string
		param     wf.Parameter
		files     map[string]string
		wantValue string
		wantErr   string
	}{
		{name: "one trailing newline stripped", param: wf.Parameter{Name: "p", ValueFrom: &wf.ValueFrom{Path: "/work/p"}},
			files: map[string]string{"p": "42\n\n"}, wantValue: "42\n"},
		{name: "Argo's valueFrom.default when the file is missing", param: wf.Parameter{Name: "p", ValueFrom: &wf.ValueFrom{Path: "/work/none", Default: wf.AnyStringPtr("dflt")}},
			wantValue: "dflt"},
		{name: "globalName and valueFrom echoed", param: wf.Parameter{Name: "p", GlobalName: "g", ValueFrom: &wf.ValueFrom{Path: "/work/p"}},
			files: map[string]string{"p": "v"}, wantValue: "v"},
		{name: "non-UTF-8 content is an error naming the offset, never replaced", param: wf.Parameter{Name: "bin", ValueFrom: &wf.ValueFrom{Path: "/work/bin"}},
			files: map[string]string{"bin": "ok\xff\xfe"}, wantErr: `output parameter "bin": read /work/bin: the file is not UTF-8 text (first bad byte 0xff at offset 2 of 4)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := &wf.Template{Container: &corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "w", MountPath: "/work"}}},
				Outputs: wf.Outputs{Parameters: []wf.Parameter{tt.param}}}
			rep := &recorder{}
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Paths: flow.Paths{MainCtrFS: mainFS(t, tt.files)}}, &executortest.Fake{}, nil, rep, testLog())
			err := we.Wait(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if len(rep.got.Parameters) != 0 {
					t.Errorf("reported %+v despite the error", rep.got.Parameters)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := rep.got.Parameters
			if len(got) != 1 || got[0].Value == nil || string(*got[0].Value) != tt.wantValue {
				t.Fatalf("parameters = %+v, want value %q", got, tt.wantValue)
			}
			if got[0].GlobalName != tt.param.GlobalName || got[0].ValueFrom == nil || got[0].ValueFrom.Path != tt.param.ValueFrom.Path {
				t.Errorf("parameter not echoed as declared: %+v", got[0])
			}
		})
	}
}

// progressLines counts the archive progress lines logged so far.
func progressLines(hook *logtest.Hook) int {
	n := 0
	for _, e := range hook.AllEntries() {
		if e.Message == "archiving output in progress" {
			n++
		}
	}
	return n
}

// TestInitArtifactModes (issue 25 item 6b): an input file is 0644 unless
// the artifact's mode says otherwise; mode applies as Argo's argoexec
// applies it, to the path, and with recurseMode to all under it.
func TestInitArtifactModes(t *testing.T) {
	m0600, m0700 := int32(0o600), int32(0o700)
	store := &memStore{objects: map[string][]byte{
		"file.tgz": tgzOf(t, map[string]string{"f": "x"}),
		"dir.tgz":  tgzOf(t, map[string]string{"d/a": "A"}),
	}}
	tmpl := scriptTemplate()
	tmpl.Inputs.Artifacts = []wf.Artifact{
		{Name: "plain", Path: "/in/plain", S3: &wf.S3Artifact{Key: "file.tgz"}},
		{Name: "private", Path: "/in/private", Mode: &m0600, S3: &wf.S3Artifact{Key: "file.tgz"}},
		{Name: "dir", Path: "/in/dir", Mode: &m0700, RecurseMode: true, S3: &wf.S3Artifact{Key: "dir.tgz"}},
	}
	inputs := t.TempDir()
	we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Paths: flow.Paths{VarRunArgo: t.TempDir(), InputArtifacts: inputs}}, nil, storeOf(store), nil, testLog())
	if err := we.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]os.FileMode{"plain": 0o644, "private": 0o600, "dir": 0o700, "dir/a": 0o700} {
		fi, err := os.Stat(filepath.Join(inputs, rel))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %04o", rel, fi.Mode().Perm(), err, want)
		}
	}
}
