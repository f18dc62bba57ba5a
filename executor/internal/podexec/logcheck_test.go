package podexec

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLogIncomplete: a log is called incomplete only when the status showed
// the exit late and the log stops well before the exit (or is empty); the
// last line is asked for only after a late report.
func TestLogIncomplete(t *testing.T) {
	exit := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC) // finishedAt: whole seconds
	type line struct {
		ts  time.Time
		ok  bool
		err error
	}
	for _, tc := range []struct {
		name     string
		seenLag  time.Duration // when the followed status first showed the exit, after finishedAt
		byExec   bool          // Wait's exec fast path saw this instance exit
		notSeen  bool          // the engine never followed the status to the exit
		last     line
		wantAsk  bool
		want     []string // "" wanted when nil
		wantErrs []string
	}{
		{name: "prompt report, empty log", seenLag: 1900 * time.Millisecond, last: line{}},
		{name: "late report, log reaches the exit", seenLag: 12 * time.Second, last: line{ts: exit.Add(-500 * time.Millisecond), ok: true}, wantAsk: true},
		{name: "late report, line in the second finishedAt rounds down", seenLag: 12 * time.Second, last: line{ts: exit.Add(900 * time.Millisecond), ok: true}, wantAsk: true},
		{
			name: "late report, empty log", seenLag: 12 * time.Second, last: line{}, wantAsk: true,
			want: []string{`container "main" exited at 2026-12-02T07:00:00Z`, "only 12s later", "its log is empty", "container runtime was probably down", "emissary"},
		},
		{
			name: "late report, log stops long before the exit", seenLag: 9 * time.Second, last: line{ts: exit.Add(-30 * time.Second), ok: true}, wantAsk: true,
			want: []string{"ends at 2026-12-02T06:59:30Z, 30s before the exit", "only 9s later"},
		},
		{name: "late report, but exec saw the exit", seenLag: 12 * time.Second, byExec: true, last: line{}},
		{name: "status never followed to the exit", notSeen: true, last: line{}},
		{
			name: "late report, the log cannot be read", seenLag: 12 * time.Second, last: line{err: errors.New("503 Service Unavailable")}, wantAsk: true,
			wantErrs: []string{"k8sapi", `check that the log of container "main" of pod argo/wf-1 reaches its exit`, "503"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakePod("main")
			e, fc := newTestEngine(p.execer(nil), p)
			fc.SetTime(exit.Add(tc.seenLag))
			pod := p.pod.DeepCopy()
			pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, ContainerID: "main-1", FinishedAt: metav1.NewTime(exit)}}
			if !tc.notSeen {
				e.noteExits(pod, []string{"main"})
			}
			if tc.byExec {
				e.markExit("main", "main-1")
			}
			asked := false
			got, err := e.LogIncomplete(context.Background(), "main", func(_ context.Context, c string) (time.Time, bool, error) {
				asked = true
				if c != "main" {
					t.Errorf("last line asked of %q, want main", c)
				}
				return tc.last.ts, tc.last.ok, tc.last.err
			})
			if asked != tc.wantAsk {
				t.Errorf("last line asked = %v, want %v", asked, tc.wantAsk)
			}
			if len(tc.wantErrs) > 0 {
				if err == nil {
					t.Fatalf("LogIncomplete = %q, nil; want an error", got)
				}
				for _, w := range tc.wantErrs {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("LogIncomplete: %v", err)
			}
			if tc.want == nil && got != "" {
				t.Errorf("LogIncomplete = %q, want \"\"", got)
			}
			if tc.want != nil && got == "" {
				t.Errorf("LogIncomplete = \"\", want a reason")
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("reason %q does not contain %q", got, w)
				}
			}
		})
	}
}

// TestWaitNotesLateExit: Wait's status path records when the followed
// status first showed main's exit, which LogIncomplete judges.
func TestWaitNotesLateExit(t *testing.T) {
	exit := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	p := newFakePod("main")
	e, fc := newTestEngine(p.execer(nil), p)
	e.cfg.NoExecWait = true
	done := waitAsync(e, "main")
	waitFollowing(p, 1)
	fc.SetTime(exit.Add(20 * time.Second))
	p.update(func(pod *corev1.Pod) {
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "main-1", FinishedAt: metav1.NewTime(exit)}}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := e.LogIncomplete(context.Background(), "main", func(context.Context, string) (time.Time, bool, error) { return time.Time{}, false, nil })
	if err != nil || !strings.Contains(got, "only 20s later") {
		t.Errorf("LogIncomplete = %q, %v; want the 20 s late report named", got, err)
	}
}

func TestLastLineTime(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Time
		ok      bool
		wantErr string
	}{
		{in: "2026-12-02T07:00:01.123456789Z the answer\n", want: time.Date(2026, 12, 2, 7, 0, 1, 123456789, time.UTC), ok: true},
		{in: "2026-12-02T07:00:01Z \n", want: time.Date(2026, 12, 2, 7, 0, 1, 0, time.UTC), ok: true},
		{in: ""},
		{in: "the answer\n", wantErr: "does not start with a timestamp"},
		{in: strings.Repeat("x", 200), wantErr: "does not start with a timestamp"},
	} {
		got, ok, err := LastLineTime(strings.NewReader(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("LastLineTime(%.20q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("LastLineTime(%.20q) = %v, %v, %v; want %v, %v", tc.in, got, ok, err, tc.want, tc.ok)
		}
	}
}

// TestSettleLog: a log whose last entry is logQuiet old, or whose end stays
// put until it is, or still ends where the caller saw it settle, has
// settled; one that keeps growing is given up on after logSettleMax, said
// as not settled.
func TestSettleLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		// ends gives the answer to each ask, from the clock's now and the
		// ask's number (0 first); has false is an empty log.
		ends        func(now time.Time, i int) (ts time.Time, has bool)
		known       bool // the caller passes the first answer as known
		wantAsks    int  // 0: many (the give-up case)
		wantSettled bool
		wantEmpty   bool
	}{
		{name: "last entry old", ends: func(now time.Time, _ int) (time.Time, bool) { return now.Add(-time.Second), true }, wantAsks: 1, wantSettled: true},
		{name: "recent entry, end stays", ends: func(time.Time, int) (time.Time, bool) { return time.Unix(0, 0).Add(-10 * time.Millisecond), true }, wantAsks: 2, wantSettled: true},
		{name: "recent entry, end known", known: true, ends: func(time.Time, int) (time.Time, bool) { return time.Unix(0, 0).Add(-10 * time.Millisecond), true }, wantAsks: 1, wantSettled: true},
		{name: "grows, then stays", ends: func(now time.Time, i int) (time.Time, bool) {
			return time.Unix(0, 0).Add(time.Duration(min(i, 2)) * logQuiet), true
		}, wantAsks: 4, wantSettled: true},
		{name: "empty, stays empty", ends: func(time.Time, int) (time.Time, bool) { return time.Time{}, false }, wantAsks: 2, wantSettled: true, wantEmpty: true},
		{name: "keeps growing", ends: func(now time.Time, _ int) (time.Time, bool) { return now, true }, wantSettled: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakePod("main")
			e, fc := newTestEngine(p.execer(nil), p)
			var known time.Time
			if tc.known {
				known, _ = tc.ends(fc.Now(), 0)
			}
			asks := 0
			stop := drive(t, fc, time.Millisecond)
			end, settled, err := e.SettleLog(context.Background(), "main", func(_ context.Context, c string) (time.Time, bool, error) {
				ts, has := tc.ends(fc.Now(), asks)
				asks++
				return ts, has, nil
			}, known)
			stop()
			if err != nil {
				t.Fatalf("SettleLog: %v", err)
			}
			if settled != tc.wantSettled {
				t.Errorf("settled = %v, want %v", settled, tc.wantSettled)
			}
			if end.IsZero() != tc.wantEmpty {
				t.Errorf("end = %v, want empty: %v", end, tc.wantEmpty)
			}
			switch {
			case tc.wantAsks > 0 && asks != tc.wantAsks:
				t.Errorf("asked %d times, want %d", asks, tc.wantAsks)
			case tc.wantAsks == 0 && asks < int(logSettleMax/logQuiet):
				t.Errorf("asked %d times, want one every %v for %v", asks, logQuiet, logSettleMax)
			}
		})
	}
	t.Run("the end cannot be read", func(t *testing.T) {
		p := newFakePod("main")
		e, _ := newTestEngine(p.execer(nil), p)
		_, _, err := e.SettleLog(context.Background(), "main", func(context.Context, string) (time.Time, bool, error) {
			return time.Time{}, false, errors.New("503 Service Unavailable")
		}, time.Time{})
		for _, w := range []string{"k8sapi", `find where the log of container "main" of pod argo/wf-1 ends`, "503"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v does not say %q", err, w)
			}
		}
	})
}
