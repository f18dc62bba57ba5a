// Package stdoutlog asks a Kubernetes log endpoint (the API server's
// pods/log, the kubelet's /containerLogs) for a container's stdout alone,
// and finds out, once per backend, whether the endpoint can give it.
//
// The stream field (PodLogOptions.Stream, the kubelet's stream= parameter)
// needs the feature gate PodLogsQuerySplitStreams (alpha since Kubernetes
// 1.32). With the gate off the endpoint refuses the field (400 or 422); an
// endpoint older than 1.32 does not know it and silently sends both
// streams. So the first stdout-only request runs, beside it, a probe that
// names a stream that does not exist (ProbeStream): an endpoint that
// honours the field refuses it, one that ignores it answers 200. The
// probe cannot see past the endpoint: an API server with the gate on in
// front of a kubelet older than 1.32 (a skew the policy allows) passes the
// field on and the kubelet ignores it.
package stdoutlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
)

// ProbeStream is a log stream name that no Kubernetes version has.
const ProbeStream = "argoexec-probe"

// ErrUnsupported is returned when the endpoint cannot give stdout alone;
// the backend maps it to its executor.ErrNotSupported error, which names
// the feature gate.
var ErrUnsupported = errors.New("the log endpoint cannot give stdout alone")

// Request is one stdout-only log request to an endpoint.
type Request struct {
	// Server names the endpoint in errors: "API server", "kubelet".
	Server string
	// Log gets a debug line when the endpoint refuses or ignores the field.
	Log *logrus.Entry
	// Open asks for the container's stdout alone.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// OpenProbe asks for ProbeStream of the same container (one byte at
	// most).
	OpenProbe func(ctx context.Context) (io.ReadCloser, error)
	// Refused says whether an error of Open or OpenProbe is the endpoint
	// refusing the stream it was asked for (400 or 422).
	Refused func(error) bool
}

// Probe remembers what the endpoint can do: keep one per endpoint. The
// zero value knows nothing yet; it is safe for concurrent use.
type Probe struct {
	// state is unknown until the first request settles it.
	state atomic.Int32
}

// What Probe.state knows.
const (
	unknown int32 = iota
	honoured
	unsupported
)

// Open returns the stdout-only stream of req, or ErrUnsupported when the
// endpoint refuses the stream field or (found by the probe on the first
// request) ignores it. Other errors are Open's, or the probe's, said as such.
func (p *Probe) Open(ctx context.Context, req Request) (io.ReadCloser, error) {
	state := p.state.Load()
	if state == unsupported {
		return nil, ErrUnsupported
	}
	// The first request runs its probe beside it, not after it: the probe
	// costs no time on the way to main's result. Every path below waits for
	// it, so it never outlives Open.
	probe := func() (bool, error) { return true, nil }
	if state == unknown {
		type result struct {
			honoured bool
			err      error
		}
		probed := make(chan result, 1)
		go func() {
			h, err := p.honoured(ctx, req)
			probed <- result{h, err}
		}()
		probe = sync.OnceValues(func() (bool, error) { r := <-probed; return r.honoured, r.err })
	}
	rc, err := req.Open(ctx)
	switch {
	case err != nil && req.Refused(err):
		_, _ = probe()
		req.Log.WithError(err).Debugf("%s refused stream=Stdout", req.Server)
		p.state.Store(unsupported)
		return nil, ErrUnsupported
	case err != nil:
		_, _ = probe()
		return nil, err
	case state == unknown:
		ok, err := probe()
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("check that the %s honours stream=Stdout: %w", req.Server, err)
		}
		if !ok {
			rc.Close()
			p.state.Store(unsupported)
			return nil, ErrUnsupported
		}
		p.state.Store(honoured)
	}
	return rc, nil
}

// honoured asks for ProbeStream: an endpoint that knows the stream field
// refuses it (whether the gate is on or off), one that does not answers.
func (p *Probe) honoured(ctx context.Context, req Request) (bool, error) {
	rc, err := req.OpenProbe(ctx)
	switch {
	case err != nil && req.Refused(err):
		return true, nil
	case err != nil:
		return false, err
	}
	rc.Close()
	req.Log.Debugf("the %s ignored stream=%s: it does not know the stream field", req.Server, ProbeStream)
	return false, nil
}
