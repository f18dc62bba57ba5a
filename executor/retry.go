package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// apiRetry is how the reporters retry one API call that failed for a reason
// that may pass: the server busy, restarting or unreachable, or its storage
// (etcd) stalled (see retriable); one 401, after which client-go reads a
// rotated service-account token again; and, once the server could not be
// reached, 401 and 403 too: a kube-apiserver that has just started answers
// 403 until its RBAC caches are filled (the fault suite's report got one at
// its first try after a restart), so a refusal right after an outage is the
// restart, not the grants. It backs
// off exponentially from first
// to at most maxDelay, stops after attempts tries (0: no limit), and never
// waits past ctx, which must have a deadline when attempts is 0.
type apiRetry struct {
	clock    clock.Clock // nil means the real clock
	first    time.Duration
	maxDelay time.Duration
	attempts int
	log      *logrus.Entry // each retry is logged at info; nil logs nothing
}

// do calls fn until it succeeds or fails for good, and returns its last
// error: as it is when it is not worth retrying, else saying after how many
// attempts the tries or ctx ran out.
func (r apiRetry) do(ctx context.Context, what string, fn func(context.Context) error) error {
	clk := r.clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	delay, saw401, sawDown := r.first, false, false
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
		if r.attempts > 0 && attempt >= r.attempts {
			return fmt.Errorf("%w (attempt %d)", err, attempt)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w after %d attempts (last error: %w)", ctx.Err(), attempt, err)
		}
		if r.log != nil {
			r.log.WithError(err).WithField("attempt", attempt).WithField("retryIn", delay).Info(what + " failed; retrying")
		}
		t := clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w after %d attempts (last error: %w)", ctx.Err(), attempt, err)
		case <-t.C():
		}
		delay = min(2*delay, r.maxDelay)
	}
}

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
