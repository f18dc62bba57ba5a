package stdoutlog

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sirupsen/logrus"
)

var errRefused = errors.New("422 stream: Forbidden")

// body is a stream that records whether it was closed.
type body struct {
	io.Reader
	closed *atomic.Bool
}

func (b body) Close() error { b.closed.Store(true); return nil }

// endpoint is a fake log endpoint: what Open and OpenProbe answer.
type endpoint struct {
	openErr, probeErr error
	opens, probes     atomic.Int32
	closed            atomic.Bool
}

func (e *endpoint) request() Request {
	return Request{
		Server: "fake",
		Log:    logrus.NewEntry(logrus.New()),
		Open: func(context.Context) (io.ReadCloser, error) {
			e.opens.Add(1)
			if e.openErr != nil {
				return nil, e.openErr
			}
			return body{strings.NewReader("out\n"), &e.closed}, nil
		},
		OpenProbe: func(context.Context) (io.ReadCloser, error) {
			e.probes.Add(1)
			if e.probeErr != nil {
				return nil, e.probeErr
			}
			return body{strings.NewReader("x"), new(atomic.Bool)}, nil
		},
		Refused: func(err error) bool { return errors.Is(err, errRefused) },
	}
}

func TestOpen(t *testing.T) {
	for _, tc := range []struct {
		name              string
		openErr, probeErr error
		wantErr           string // "" means the stream
		wantUnsupported   bool
		// second is what a second request costs: opens and probes in all.
		wantOpens, wantProbes int32
	}{
		{name: "honoured: stream, probed once", probeErr: errRefused, wantOpens: 2, wantProbes: 1},
		{name: "field refused (gate off): unsupported, remembered", openErr: errRefused, probeErr: errRefused, wantUnsupported: true, wantOpens: 1, wantProbes: 1},
		{name: "field ignored (older server): unsupported, stream closed", wantUnsupported: true, wantOpens: 1, wantProbes: 1},
		{name: "probe fails: said so", probeErr: errors.New("503"), wantErr: "check that the fake honours stream=Stdout: 503", wantOpens: 2, wantProbes: 2},
		{name: "open fails: its error", openErr: errors.New("500"), probeErr: errRefused, wantErr: "500", wantOpens: 2, wantProbes: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &endpoint{openErr: tc.openErr, probeErr: tc.probeErr}
			var p Probe
			for range 2 {
				rc, err := p.Open(context.Background(), e.request())
				switch {
				case tc.wantUnsupported:
					if !errors.Is(err, ErrUnsupported) {
						t.Fatalf("err = %v, want ErrUnsupported", err)
					}
					if tc.openErr == nil && !e.closed.Load() {
						t.Error("the stream of an endpoint that ignores the field was not closed")
					}
				case tc.wantErr != "":
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("err = %v, want %q", err, tc.wantErr)
					}
				default:
					if err != nil {
						t.Fatal(err)
					}
					rc.Close()
				}
			}
			if e.opens.Load() != tc.wantOpens || e.probes.Load() != tc.wantProbes {
				t.Errorf("two requests opened %d and probed %d times, want %d and %d", e.opens.Load(), e.probes.Load(), tc.wantOpens, tc.wantProbes)
			}
		})
	}
}
