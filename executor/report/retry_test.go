package report

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// stepWhileWaiting runs fn and, whenever it waits on clk, moves clk on by the
// waiter's delay; it returns the delays fn waited and its error.
func stepWhileWaiting(clk *clocktesting.FakeClock, fn func() error) ([]time.Duration, error) {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	var waited []time.Duration
	for {
		select {
		case err := <-done:
			return waited, err
		default:
		}
		if clk.HasWaiters() {
			// the one waiter's delay is unknown here: step to the next whole half second
			// until it fires, and record how long it took
			before := clk.Now()
			for clk.HasWaiters() {
				clk.Step(500 * time.Millisecond)
			}
			waited = append(waited, clk.Now().Sub(before))
		}
		runtime.Gosched()
	}
}

func TestAPIRetry(t *testing.T) {
	refused := &net0Error{syscall.ECONNREFUSED}
	busy := apierrors.NewServiceUnavailable("etcd is slow")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no"))
	unauthorized := apierrors.NewUnauthorized("token rotated")
	tests := []struct {
		name      string
		errs      []error // returned by successive calls; then nil
		attempts  int
		wantCalls int
		wantErr   string
		wantWaits []time.Duration
	}{
		{name: "connection refused, then 503, then success", errs: []error{refused, busy}, wantCalls: 3,
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second}},
		{name: "the delay doubles up to its cap", errs: []error{busy, busy, busy, busy, busy}, wantCalls: 6,
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}},
		{name: "403 is not retried", errs: []error{forbidden}, wantCalls: 1, wantErr: "forbidden"},
		{name: "one 401 is retried (client-go rereads a rotated token)", errs: []error{unauthorized}, wantCalls: 2,
			wantWaits: []time.Duration{500 * time.Millisecond}},
		{name: "a second 401 is not", errs: []error{unauthorized, unauthorized}, wantCalls: 2, wantErr: "token rotated",
			wantWaits: []time.Duration{500 * time.Millisecond}},
		{name: "403 right after the server was unreachable is its restart: retried", errs: []error{refused, forbidden, forbidden, unauthorized, unauthorized}, wantCalls: 6,
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}},
		{name: "attempts bound the tries", errs: []error{busy, busy, busy, busy}, attempts: 3, wantCalls: 3, wantErr: "(attempt 3)",
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			calls := 0
			r := Retry{Clock: clk, First: 500 * time.Millisecond, MaxDelay: 2 * time.Second, Attempts: tt.attempts}
			waits, err := stepWhileWaiting(clk, func() error {
				return r.Do(context.Background(), "patch", func(context.Context) error {
					calls++
					if calls <= len(tt.errs) {
						return tt.errs[calls-1]
					}
					return nil
				})
			})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("do: %v, want error containing %q", err, tt.wantErr)
			}
			if calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", calls, tt.wantCalls)
			}
			if len(waits) != len(tt.wantWaits) {
				t.Fatalf("waited %v, want %v", waits, tt.wantWaits)
			}
			for i := range waits {
				if waits[i] != tt.wantWaits[i] {
					t.Errorf("wait %d: %v, want %v", i, waits[i], tt.wantWaits[i])
				}
			}
		})
	}
}

// TestAPIRetryContextEnds: a retry never outlives ctx, and the error says why it stopped,
// after how many attempts, and the last error.
func TestAPIRetryContextEnds(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	r := Retry{Clock: clk, First: time.Second, MaxDelay: time.Second}
	_, err := stepWhileWaiting(clk, func() error {
		return r.Do(ctx, "patch", func(context.Context) error {
			calls++
			if calls == 2 {
				cancel()
			}
			return apierrors.NewServiceUnavailable("apiserver restarting")
		})
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "after 2 attempts") || !strings.Contains(err.Error(), "apiserver restarting") {
		t.Fatalf("do: %v, want context canceled after 2 attempts with the last error", err)
	}
	if calls != 2 {
		t.Errorf("%d calls after ctx ended, want 2", calls)
	}
}

type net0Error struct{ errno syscall.Errno }

func (e *net0Error) Error() string { return "dial tcp 10.96.0.1:443: " + e.errno.Error() }
