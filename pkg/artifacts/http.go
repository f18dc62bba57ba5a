package artifacts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// HTTPTimeouts bound the phases of an HTTP request that can hang; none
// bounds the body, so a long download is never cut. A zero field takes its
// default.
type HTTPTimeouts struct {
	// Connect bounds the TCP connect; default 30 s.
	Connect time.Duration
	// TLSHandshake bounds the TLS handshake; default 10 s.
	TLSHandshake time.Duration
	// ResponseHeader bounds the wait for the response headers once the
	// request is sent; default 60 s.
	ResponseHeader time.Duration
}

// NewHTTPClient returns the client the HTTP driver uses by default: proxies
// from the environment, the phases of a request bounded by t, and no
// overall timeout (the request's context ends a download).
func NewHTTPClient(t HTTPTimeouts) *http.Client {
	if t.Connect <= 0 {
		t.Connect = 30 * time.Second
	}
	if t.TLSHandshake <= 0 {
		t.TLSHandshake = 10 * time.Second
	}
	if t.ResponseHeader <= 0 {
		t.ResponseHeader = 60 * time.Second
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   t.TLSHandshake,
		ResponseHeaderTimeout: t.ResponseHeader,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          10,
	}}
}

// HTTPConfig is what the HTTP driver needs.
type HTTPConfig struct {
	// Client sends the requests; nil means NewHTTPClient(HTTPTimeouts{}).
	Client *http.Client
	// Progress times downloads and says how often long ones log.
	Progress ProgressConfig
}

// HTTP is the driver for artifacts downloaded from a URL (http artifacts
// are inputs only).
type HTTP struct {
	cfg HTTPConfig
	log *logrus.Entry
}

// NewHTTP returns an HTTP driver.
func NewHTTP(cfg HTTPConfig, log *logrus.Entry) *HTTP {
	if cfg.Client == nil {
		cfg.Client = NewHTTPClient(HTTPTimeouts{})
	}
	return &HTTP{cfg: cfg, log: log}
}

// errBodyBytes is how much of an error response's body an error quotes.
const errBodyBytes = 512

// Load GETs the artifact's URL, with its headers, into the local file at
// localPath. A 404 is an error wrapping ErrNotFound (an optional input may
// be absent); any other status outside 2xx is an error with the status and
// the start of the body.
func (h *HTTP) Load(ctx context.Context, art wf.Artifact, localPath string) error {
	if art.HTTP == nil {
		return fmt.Errorf("http: artifact %q has no http location", art.Name)
	}
	url := art.HTTP.URL
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("http: artifact %q: bad url: %w", art.Name, err)
	}
	for _, hd := range art.HTTP.Headers {
		req.Header.Add(hd.Name, hd.Value)
	}
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("http: GET %s: %w", url, err)
		}
		return fmt.Errorf("http: GET %s: no answer; is the server up and reachable from the pod (the url's host and port, DNS, network policy)? %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("http: GET %s: %s; check the url: %w", url, resp.Status, ErrNotFound)
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyBytes))
		msg := fmt.Sprintf("http: GET %s: %s", url, resp.Status)
		if b := bytes.TrimSpace(body); len(b) > 0 {
			msg += ": " + string(b)
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			msg += "; the server refused the request: check the credentials the artifact's http.headers carry"
		}
		return errors.New(msg)
	}
	f, err := os.Create(localPath)
	if err != nil {
		return fmt.Errorf("http: GET %s: %w", url, err)
	}
	prog := h.cfg.Progress.Start(h.log.WithField("url", url), "download", max(resp.ContentLength, 0))
	_, err = io.Copy(io.MultiWriter(f, prog), resp.Body)
	prog.Done()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("http: GET %s: read the body into %s: %w", url, localPath, err)
	}
	return nil
}

// Save refuses: an http artifact is download-only.
func (h *HTTP) Save(_ context.Context, _ string, art wf.Artifact) (Object, error) {
	return Object{}, fmt.Errorf("http: artifact %q: %w: http artifacts are inputs only; store outputs in s3", art.Name, ErrNotSupported)
}
