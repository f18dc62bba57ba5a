package flow

import (
	"context"
	"time"
)

// saveWindow is the time wait has to save outputs once saving began because
// main did not exit by itself (wait was interrupted, or main outlived its
// deadline): everything ends by start+total, and collecting ends reserve
// before that, so the report always keeps reserve for itself. A zero
// saveWindow (main exited by itself) bounds only the report, to total from
// when the report starts: collecting a large artifact may take long, and
// must not eat the report's time.
type saveWindow struct {
	start   time.Time
	total   time.Duration
	reserve time.Duration
}

// saving reports whether the window is bounded (saving began at start).
func (w saveWindow) saving() bool { return !w.start.IsZero() }

// collect returns the context collecting outputs runs under: ctx itself when
// main exited by itself, else a context that ignores ctx's cancellation (the
// pod is going away; collect what can be) and ends reserve before the end.
func (w saveWindow) collect(ctx context.Context) (context.Context, context.CancelFunc) {
	if !w.saving() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), w.start.Add(w.total-w.reserve))
}

// report returns the context of the outputs report, which ignores ctx's
// cancellation (the kubelet gives the pod its grace period): until the end
// of the window while saving, else total from now.
func (w saveWindow) report(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	end := now.Add(w.total)
	if w.saving() {
		end = w.start.Add(w.total)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}

// stopBound is how long stopping main may take within the window: at most
// stop, and never more than what collecting would have.
func (w saveWindow) stopBound(stop time.Duration) time.Duration {
	return min(stop, w.total-w.reserve)
}
