// Package backoff is the one way the backends wait between tries: the
// delays of apimachinery's wait.Backoff, waited on an injected clock
// (k8s.io/utils/clock) so that tests drive them with a fake clock, and
// never past ctx.
package backoff

import (
	"context"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// Backoff hands out the growing delays of a wait.Backoff and waits them on
// its clock. It is not safe for concurrent use: keep one per loop.
type Backoff struct {
	clock clock.Clock
	start wait.Backoff
	steps wait.Backoff
}

// New returns the delays of b (Duration, growing by Factor up to Cap; no
// Jitter unless b sets it) on clk. Steps of 0 means no limit: a loop bounds
// its own tries, and names them in its errors.
func New(clk clock.Clock, b wait.Backoff) *Backoff {
	if b.Steps == 0 {
		b.Steps = math.MaxInt32
	}
	return &Backoff{clock: clk, start: b, steps: b}
}

// Exponential returns delays from initial, doubling up to maxDelay, on clk.
func Exponential(clk clock.Clock, initial, maxDelay time.Duration) *Backoff {
	return New(clk, wait.Backoff{Duration: initial, Factor: 2, Cap: maxDelay})
}

// Delay is the delay the next Wait or Timer will use.
func (b *Backoff) Delay() time.Duration { return b.steps.Duration }

// Next returns the next delay and moves on to the one after.
func (b *Backoff) Next() time.Duration { return b.steps.Step() }

// Reset starts the delays again from the first.
func (b *Backoff) Reset() { b.steps = b.start }

// Wait waits the next delay, or until ctx ends, whose error it returns.
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.clock, b.Next()) }

// Timer starts a timer of the next delay, for a loop that also waits on
// other channels (events that end the wait early); stop it when done.
func (b *Backoff) Timer() clock.Timer { return b.clock.NewTimer(b.Next()) }

// Sleep waits d on clk, or until ctx ends, whose error it returns; a d of
// zero or less does not wait (it returns ctx.Err()).
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
