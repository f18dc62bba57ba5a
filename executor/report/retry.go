package report

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// Retry is how the reporters retry one API call that failed for a reason
// that may pass: the server busy, restarting or unreachable, or its storage
// (etcd) stalled (see retriable); one 401, after which client-go reads a
// rotated service-account token again; and, once the server could not be
// reached, 401 and 403 too: a kube-apiserver that has just started answers
// 403 until its RBAC caches are filled (the fault suite's report got one at
// its first try after a restart), so a refusal right after an outage is the
// restart, not the grants. It backs off exponentially from First to
// at most MaxDelay, stops after Attempts tries (0: no limit), and never
// waits past ctx, which must have a deadline when Attempts is 0.
type Retry struct {
	// Clock paces the tries; nil means the real clock.
	Clock clock.Clock
	// First is the delay after the first failure; it doubles up to MaxDelay.
	First, MaxDelay time.Duration
	// Attempts bounds the tries; 0 means as many as ctx allows.
	Attempts int
	// Log gets each retry at info; nil logs nothing.
	Log *logrus.Entry
}

// Do calls fn until it succeeds or fails for good, and returns its last
// error: as it is when it is not worth retrying, else saying after how many
// attempts the tries or ctx ran out.
func (r Retry) Do(ctx context.Context, what string, fn func(context.Context) error) error {
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	delay, saw401, sawDown := r.First, false, false
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		switch {
		case sawDown && (apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)):
		case apierrors.IsUnauthorized(err) && !saw401:
			saw401 = true
		case !retriable(err):
			return err
		case !isAPIStatus(err):
			sawDown = true
		}
		if r.Attempts > 0 && attempt >= r.Attempts {
			return fmt.Errorf("%w (attempt %d)", err, attempt)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w after %d attempts (last error: %w)", ctx.Err(), attempt, err)
		}
		if r.Log != nil {
			r.Log.WithError(err).WithField("attempt", attempt).WithField("retryIn", delay).Info(what + " failed; retrying")
		}
		t := clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w after %d attempts (last error: %w)", ctx.Err(), attempt, err)
		case <-t.C():
		}
		delay = min(2*delay, r.MaxDelay)
	}
}

// Retriable says whether an API error may pass, so that a caller that
// gave up retrying it may try again later: the server was busy, timed out
// or broke the connection, or was not reached at all.
func Retriable(err error) bool { return retriable(err) }

// retriable says whether an API error may pass: the server was busy,
// timed out or broke the connection.
func retriable(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) ||
		!isAPIStatus(err)
}

func isAPIStatus(err error) bool {
	_, ok := err.(apierrors.APIStatus)
	return ok || apierrors.ReasonForError(err) != metav1.StatusReasonUnknown
}
