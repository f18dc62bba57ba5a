package flow

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	clocktesting "k8s.io/utils/clock/testing"
)

type progressRecorder struct {
	mu  sync.Mutex
	got []string
}

func (r *progressRecorder) ReportProgress(_ context.Context, p string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p)
	return nil
}

func (r *progressRecorder) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func TestMonitorProgress(t *testing.T) {
	file := filepath.Join(t.TempDir(), "progress")
	clk := clocktesting.NewFakeClock(time.Now())
	rec := &progressRecorder{}
	log, hook := logtest.NewNullLogger()
	we := NewWorkflowExecutor(WorkflowConfig{Clock: clk, Protocol: Protocol{Progress: ProgressSettings{
		File: file, FileTick: 3 * time.Second, PatchTick: time.Minute, Reporter: rec}}}, nil, nil, nil, logrus.NewEntry(log))
	stop := we.monitorProgress(context.Background())
	defer stop()
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// until polls for what the monitor did with the last tick: a report or
	// a log line (the tick is consumed then, so the next Step is not lost).
	until := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("monitor never %s; reported %v", what, rec.reported())
			}
			runtime.Gosched()
		}
	}
	reported := func(want ...string) func() bool {
		return func() bool { return strings.Join(rec.reported(), ",") == strings.Join(want, ",") }
	}
	logged := func(msg string) func() bool {
		return func() bool {
			for _, e := range hook.AllEntries() {
				if strings.Contains(e.Message, msg) {
					return true
				}
			}
			return false
		}
	}
	until("armed its ticker", clk.HasWaiters)
	write("0/3\nnot progress\n1/3\n")
	clk.Step(3 * time.Second) // read, but the report is not due before PatchTick
	until("logged 1/3", func() bool { return len(hook.AllEntries()) > 0 })
	if got := rec.reported(); len(got) != 0 {
		t.Fatalf("reported %v before PatchTick", got)
	}
	clk.Step(time.Minute)
	until("reported 1/3", reported("1/3"))
	write("1/3\n5/3\n") // N > M: logged, never reported
	clk.Step(time.Minute)
	until("refused 5/3", logged("not a progress line"))
	write("2/3\n")
	clk.Step(time.Minute)
	until("reported 2/3", reported("1/3", "2/3"))
}

func TestValidProgress(t *testing.T) {
	for s, want := range map[string]bool{"0/1": true, "3/3": true, "4/3": false, "0/0": false, "-1/2": false, "a/2": false, "12": false} {
		if got := validProgress(s); got != want {
			t.Errorf("validProgress(%q) = %v, want %v", s, got, want)
		}
	}
}
