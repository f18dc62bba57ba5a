package kubelet

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// maxErrorBody bounds how much of an error response body is read and how much
// of it goes into an error message.
const (
	maxErrorBody     = 64 * 1024
	maxErrorBodyShow = 512
)

// tokenRoundTripper sets the bearer token read from a file on every request.
// The projected service-account token rotates (about hourly, and on node
// restarts); client-go's BearerTokenFile caches it for a minute, which is
// enough for the API server but leaves a window where a rotated token is
// refused, so this reads the file (a few hundred bytes from tmpfs) each time.
//
// It also turns a failure to verify the kubelet's certificate into a
// *TLSError that names the CA file and the settings, here, where every
// request passes (plain GETs, SPDY and WebSocket upgrades) and before
// client-go's SPDY path flattens the error to text.
type tokenRoundTripper struct {
	file   string
	addr   string
	caFile string
	next   http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *tokenRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := readToken(t.file)
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := t.next.RoundTrip(req)
	if err != nil && isCertError(err) {
		te := &TLSError{Addr: t.addr, CAFile: t.caFile, Err: err}
		if f, ok := req.Context().Value(tlsFailureKey{}).(*tlsFailure); ok {
			f.set(te)
		}
		return nil, te
	}
	return resp, err
}

// tlsFailureKey keys a *tlsFailure in a request's context.
type tlsFailureKey struct{}

// tlsFailure carries a TLSError from the round tripper back to the exec
// caller, past client-go code that keeps only its text.
type tlsFailure struct {
	mu  sync.Mutex
	err *TLSError
}

func (f *tlsFailure) set(err *TLSError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *tlsFailure) get() *TLSError {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// withTLSFailure returns ctx carrying a fresh tlsFailure.
func withTLSFailure(ctx context.Context) (context.Context, *tlsFailure) {
	f := &tlsFailure{}
	return context.WithValue(ctx, tlsFailureKey{}, f), f
}

// WrappedRoundTripper lets client-go's streaming code find the TLS settings
// of the transport underneath (k8s.io/apimachinery/pkg/util/net.RoundTripperWrapper).
func (t *tokenRoundTripper) WrappedRoundTripper() http.RoundTripper { return t.next }

// readToken reads and trims the bearer token in file.
func readToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read service-account token %s: %w", file, err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("read service-account token %s: file is empty", file)
	}
	return token, nil
}

// restConfig builds the one client configuration every request to the
// kubelet uses: plain GETs (/pods, /containerLogs) and the SPDY and WebSocket
// exec streams. The bearer token is added by tokenRoundTripper, not by
// client-go, so that it is re-read on every request.
func restConfig(cfg Config) *rest.Config {
	rc := &rest.Config{
		Host:      cfg.baseURL(),
		UserAgent: "argoexec-kubelet",
		// Streams (logs, exec) run as long as they run: no client timeout;
		// every call is bounded by its ctx instead.
		Timeout: 0,
	}
	if cfg.Insecure {
		rc.TLSClientConfig.Insecure = true
	} else {
		rc.TLSClientConfig.CAFile = cfg.CAFile
	}
	file, addr, caFile := cfg.TokenFile, cfg.addr(), cfg.CAFile
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &tokenRoundTripper{file: file, addr: addr, caFile: caFile, next: rt}
	}
	return rc
}

// checkCAFile fails early, naming the settings, when the CA bundle that would
// verify the kubelet cannot be used.
func checkCAFile(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read kubelet CA file %s (ConfigMap kubeletCAFile; kubeletInsecure: true skips verification): %w", file, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return fmt.Errorf("kubelet CA file %s holds no PEM certificate (ConfigMap kubeletCAFile; kubeletInsecure: true skips verification)", file)
	}
	return nil
}

// StatusError is an HTTP status from the kubelet other than the one a request
// expected. Check it with errors.As; Code is the HTTP status code.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// Status is the status line, e.g. "403 Forbidden".
	Status string
	// Body is the start of the response body, truncated.
	Body string
	// Hint says what to do about it, naming the token file, service account
	// or RBAC verb involved.
	Hint string
	// Err is the underlying error when the status came through client-go's
	// exec (a refused SPDY or WebSocket upgrade); nil for plain requests.
	Err error
}

// Unwrap returns Err.
func (e *StatusError) Unwrap() error { return e.Err }

// Error implements error.
func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString("kubelet answered ")
	b.WriteString(e.Status)
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// TLSError is a failure to verify the kubelet's serving certificate. It
// unwraps to the crypto/x509 or crypto/tls error.
type TLSError struct {
	// Addr is the kubelet's host:port.
	Addr string
	// CAFile is the CA bundle the certificate was checked against.
	CAFile string
	// Err is the verification error.
	Err error
}

// Error implements error.
func (e *TLSError) Error() string {
	return fmt.Sprintf("verify the kubelet's serving certificate at %s against CA file %s: %v "+
		"(set ConfigMap kubeletCAFile to the CA that signed the kubelet's serving certificate, "+
		"or kubeletInsecure: true to skip verification)", e.Addr, e.CAFile, e.Err)
}

// Unwrap returns the verification error.
func (e *TLSError) Unwrap() error { return e.Err }

// isCertError reports whether err is a failure to verify a peer certificate.
func isCertError(err error) bool {
	var (
		verr *tls.CertificateVerificationError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		ierr x509.CertificateInvalidError
	)
	return errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) || errors.As(err, &ierr)
}

// mapTransportError turns a certificate failure that the round tripper did
// not already explain into a TLSError; other errors pass through.
func (e *Executor) mapTransportError(err error) error {
	var te *TLSError
	if err == nil || !isCertError(err) || errors.As(err, &te) {
		return err
	}
	return &TLSError{Addr: e.cfg.addr(), CAFile: e.cfg.CAFile, Err: err}
}

// statusError reads (a bounded part of) resp's body and closes it, and
// returns the StatusError for it. verb is the RBAC verb the request needed
// and path the kubelet path it went to, for the 403 hint.
func (e *Executor) statusError(resp *http.Response, verb, path string) error {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return e.newStatusError(resp.StatusCode, resp.Status, body, verb, path)
}

// newStatusError builds the StatusError for code, with its hint; verb and
// path are as for statusError.
func (e *Executor) newStatusError(code int, status string, body []byte, verb, path string) *StatusError {
	if status == "" {
		status = fmt.Sprintf("%d %s", code, http.StatusText(code))
	}
	se := &StatusError{Code: code, Status: status, Body: truncate(string(bytes.TrimSpace(body)), maxErrorBodyShow)}
	switch code {
	case http.StatusUnauthorized:
		se.Hint = fmt.Sprintf("the kubelet did not accept the bearer token in %s as %s "+
			"(is the token expired, or is the kubelet's webhook authentication off?)",
			e.cfg.TokenFile, e.serviceAccount())
	case http.StatusForbidden:
		se.Hint = forbiddenHint(e.serviceAccount(), verb, path, body)
	}
	return se
}

// podsPath is the kubelet path that lists the node's pods.
const podsPath = "/pods"

// forbiddenHint says which RBAC grant a kubelet refused to who, and what to
// grant. The kubelet authorises a request as verb on one or more node
// subresources and accepts the first one allowed (KEP-2862, fine-grained
// kubelet authorization: beta and on by default in Kubernetes 1.33, GA in
// 1.36): /pods as nodes/pods, then nodes/proxy; every other path this backend
// uses (/exec, /containerLogs) as nodes/proxy alone. Its 403 body lists the
// subresources it tried ("subresource(s)=[pods proxy]"), which tells a
// kubelet that knows nodes/pods from an older one (or one with the feature
// gate KubeletFineGrainedAuthz off) that only knows nodes/proxy.
func forbiddenHint(who, verb, path string, body []byte) string {
	if head, _, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/"); ok {
		path = "/" + head // /exec/{ns}/{pod}/{c} -> /exec
	}
	proxy := fmt.Sprintf("%s lacks RBAC verb %q on resource nodes/proxy "+
		"(bind it to a ClusterRole granting nodes/proxy %s, as manifests/overlays/kubelet does; "+
		"the kubelet authorises %s as nodes/proxy only, which opens /exec on every pod of the node)",
		who, verb, verb, path)
	if path != podsPath {
		return proxy
	}
	subs, known := kubeletSubresources(body)
	switch {
	case known && slices.Contains(subs, "pods"):
		return fmt.Sprintf("%s lacks RBAC verb %q on resource nodes/pods "+
			"(bind it to a ClusterRole granting nodes/pods %s, as manifests/overlays/kubelet does; "+
			"this kubelet authorises /pods as nodes/pods, or as nodes/proxy, which also opens /exec on every pod of the node)",
			who, verb, verb)
	case known:
		return fmt.Sprintf("%s lacks RBAC verb %q on resource nodes/proxy: this kubelet authorises /pods as nodes/proxy alone "+
			"(it is older than Kubernetes 1.33, or runs with the feature gate KubeletFineGrainedAuthz off), so nodes/pods does not help here; "+
			"grant nodes/proxy %s (node-wide: it also opens /exec on every pod of the node)",
			who, verb, verb)
	}
	return fmt.Sprintf("%s lacks RBAC verb %q on resource nodes/pods (kubelets of Kubernetes 1.33 and later) "+
		"or nodes/proxy (older kubelets, which authorise /pods as nodes/proxy alone): grant nodes/pods %s, "+
		"as manifests/overlays/kubelet does, and on older kubelets nodes/proxy %s",
		who, verb, verb, verb)
}

// kubeletSubresources returns the node subresources a kubelet's 403 body
// says it tried ("Forbidden (user=..., verb=get, resource=nodes,
// subresource(s)=[pods proxy])"), and whether the body said.
func kubeletSubresources(body []byte) ([]string, bool) {
	_, rest, ok := bytes.Cut(body, []byte("subresource(s)=["))
	if !ok {
		return nil, false
	}
	list, _, ok := bytes.Cut(rest, []byte("]"))
	if !ok {
		return nil, false
	}
	return strings.Fields(string(list)), true
}

// serviceAccount names the identity of the token, from its (unverified) JWT
// claims, for error messages.
func (e *Executor) serviceAccount() string {
	token, err := readToken(e.cfg.TokenFile)
	if err != nil {
		return "the service account of token file " + e.cfg.TokenFile
	}
	if sub := tokenSubject(token); sub != "" {
		return "service account " + sub
	}
	return "the service account of token file " + e.cfg.TokenFile
}

// tokenSubject returns the "sub" claim of a JWT without verifying it, or "".
func tokenSubject(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Sub
}

// truncate shortens s to at most n bytes, saying that it did.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "... (truncated)"
}
