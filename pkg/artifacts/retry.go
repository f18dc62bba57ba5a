package artifacts

import (
	"context"
	"net/http"
	"time"
)

// retryPolicy is how an HTTP store's driver (artifactory, gcs) retries one
// request: Tries attempts in all, Backoff before the second, doubling
// after.
type retryPolicy struct {
	client  *http.Client
	tries   int
	backoff time.Duration
}

// retryable says whether an answer is worth asking again for: a server
// error, or 429 Too Many Requests (as Google's clients and Argo's GCS driver
// retry).
func retryable(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests
}

// send sends the request newReq makes, again on a transport error or a
// retryable answer, up to p.tries times; retrying, if not nil, is told of
// each retry and how long it waits. It returns the last answer with its body
// open, or the last transport error and how many attempts were made; an
// error of newReq's own is returned as it is, with zero attempts. It stops
// early, with ctx's error, when ctx ends.
func (p retryPolicy) send(ctx context.Context, newReq func() (*http.Request, error), retrying func(try int, wait time.Duration)) (*http.Response, int, error) {
	wait := p.backoff
	for try := 1; ; try++ {
		req, err := newReq()
		if err != nil {
			return nil, 0, err
		}
		resp, err := p.client.Do(req)
		retry := err != nil || retryable(resp.StatusCode)
		if !retry || try >= p.tries || ctx.Err() != nil {
			return resp, try, err
		}
		if resp != nil {
			resp.Body.Close()
		}
		if retrying != nil {
			retrying(try, wait)
		}
		select {
		case <-ctx.Done():
			return nil, try, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}
