package backoff

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestDelays(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	for _, tc := range []struct {
		name string
		b    *Backoff
		want []time.Duration
	}{
		{"doubling to a cap", Exponential(clk, 100*time.Millisecond, time.Second),
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}},
		{"factor 5, no cap", New(clk, wait.Backoff{Duration: 10 * time.Millisecond, Factor: 5}),
			[]time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond, 1250 * time.Millisecond}},
		{"constant", New(clk, wait.Backoff{Duration: time.Second}), []time.Duration{time.Second, time.Second, time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				if d := tc.b.Delay(); d != want {
					t.Errorf("Delay %d = %v, want %v", i, d, want)
				}
				if d := tc.b.Next(); d != want {
					t.Errorf("delay %d = %v, want %v", i, d, want)
				}
			}
			tc.b.Reset()
			if d := tc.b.Next(); d != tc.want[0] {
				t.Errorf("after Reset: %v, want %v", d, tc.want[0])
			}
		})
	}
}

// TestWait checks that Wait waits the delay on the injected clock and that
// a cancelled ctx ends it at once with its error.
func TestWait(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := Exponential(clk, time.Second, time.Minute)
	done := make(chan error, 1)
	go func() { done <- b.Wait(context.Background()) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before the clock moved", err)
	default:
	}
	clk.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Wait = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled ctx = %v, want context.Canceled", err)
	}
}
