package agent

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/report"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// DefaultHTTPTimeout bounds an HTTP template's request, response body
// included, when its timeoutSeconds is not set: the field's documented
// default (Argo v3.3.8's code sets none, so a server that never answers
// would keep the node running forever).
const DefaultHTTPTimeout = 30 * time.Second

// MaxResponseBytes bounds the response body an HTTP template reads: it
// becomes the node's outputs.result, which travels in the WorkflowTaskSet's
// status and the Workflow object, both bounded by the API server's request
// size (about 1.5 MiB in etcd).
const MaxResponseBytes = 1 << 20

// newHTTPClients returns the clients that verify TLS (false) and that do
// not (true, insecureSkipVerify), over clones of base.
func newHTTPClients(base *http.Transport) map[bool]*http.Client {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	insecure := base.Clone()
	if insecure.TLSClientConfig == nil {
		insecure.TLSClientConfig = &tls.Config{}
	}
	insecure.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // the template's insecureSkipVerify asks for it
	return map[bool]*http.Client{false: {Transport: base.Clone()}, true: {Transport: insecure}}
}

// timeoutError is the cause of a request's context when its timeout passes.
type timeoutError struct {
	d    time.Duration
	what string
}

func (e *timeoutError) Error() string { return fmt.Sprintf("no answer within %s (%s)", e.d, e.what) }

// withTimeout is ctx ended, with cause *timeoutError, d after now on clk.
func withTimeout(ctx context.Context, clk clock.WithDelayedExecution, d time.Duration, what string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := clk.AfterFunc(d, func() { cancel(&timeoutError{d: d, what: what}) })
	return ctx, func() { t.Stop(); cancel(nil) }
}

// runHTTP sends an HTTP template's request and judges its response as
// Argo v3.3.8's agent does: by successCondition, an expr expression over
// request and response (statusCode, body, headers), or, without one, by a
// 2xx status code. The body is the node's outputs.result either way.
func (a *Agent) runHTTP(ctx context.Context, h *wf.HTTPTemplate, log *logrus.Entry) wf.NodeResult {
	status, header, body, err := a.sendHTTP(ctx, h)
	if err != nil {
		return wf.NodeResult{Phase: wf.NodeFailed, Message: err.Error()}
	}
	log.WithFields(logrus.Fields{"statusCode": status, "bodyBytes": len(body)}).Info("HTTP template: got the response")
	res := wf.NodeResult{Phase: wf.NodeSucceeded, Outputs: &wf.Outputs{Result: &body}}
	if h.SuccessCondition == "" {
		if status < 200 || status > 299 {
			res.Phase, res.Message = wf.NodeFailed, fmt.Sprintf("received non-2xx response code: %d", status)
		}
		return res
	}
	scope := map[string]any{
		"request": map[string]any{
			"method": h.Method, "url": h.URL, "body": h.Body, "headers": plainHeaders(h.Headers),
		},
		"response": map[string]any{"statusCode": status, "body": body, "headers": header},
	}
	ok, err := evalBool(h.SuccessCondition, scope)
	switch {
	case err != nil:
		// Argo's agent fails the node with the outputs unset.
		return wf.NodeResult{Phase: wf.NodeFailed, Message: err.Error()}
	case !ok:
		res.Phase, res.Message = wf.NodeFailed, fmt.Sprintf("successCondition '%s' evaluated false", h.SuccessCondition)
	}
	return res
}

// evalBool evaluates a successCondition, which must be a boolean.
func evalBool(cond string, scope map[string]any) (bool, error) {
	v, err := expr.Eval(cond, scope)
	if err != nil {
		return false, fmt.Errorf("unable to evaluate expression '%s': %v", cond, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("unable to cast expression result '%v' to bool: successCondition '%s' must be a boolean expression, such as response.statusCode == 201", v, cond)
	}
	return b, nil
}

// plainHeaders are the template's headers with a literal value, as Argo
// shows them to a successCondition as request.headers (those taken from a
// secret are left out).
func plainHeaders(hs []wf.HTTPHeader) http.Header {
	out := http.Header{}
	for _, h := range hs {
		if h.ValueFrom == nil {
			out[h.Name] = []string{h.Value}
		}
	}
	return out
}

// sendHTTP sends the request and reads the response, within the
// template's timeout.
func (a *Agent) sendHTTP(ctx context.Context, h *wf.HTTPTemplate) (int, http.Header, string, error) {
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	timeout := DefaultHTTPTimeout
	if h.TimeoutSeconds != nil {
		if *h.TimeoutSeconds <= 0 {
			return 0, nil, "", fmt.Errorf("HTTP %s %s: timeoutSeconds is %d: set a positive number of seconds, or leave it out for %s", method, h.URL, *h.TimeoutSeconds, DefaultHTTPTimeout)
		}
		timeout = time.Duration(*h.TimeoutSeconds) * time.Second
	}
	ctx, cancel := withTimeout(ctx, a.Clock, timeout, "the template's timeoutSeconds")
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.URL, strings.NewReader(h.Body))
	if err != nil {
		return 0, nil, "", fmt.Errorf("HTTP %s %s: build the request: %w", method, h.URL, err)
	}
	for _, hd := range h.Headers {
		v := hd.Value
		if hd.ValueFrom != nil && hd.ValueFrom.SecretKeyRef != nil {
			if v, err = a.secretValue(ctx, hd.ValueFrom.SecretKeyRef.Name, hd.ValueFrom.SecretKeyRef.Key); err != nil {
				return 0, nil, "", fmt.Errorf("HTTP %s %s: header %q: %w", method, h.URL, hd.Name, err)
			}
		}
		req.Header.Add(hd.Name, v)
	}
	resp, err := a.clients[h.InsecureSkipVerify].Do(req)
	if err != nil {
		return 0, nil, "", fmt.Errorf("HTTP %s %s: %w", method, h.URL, causeOf(ctx, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return 0, nil, "", fmt.Errorf("HTTP %s %s: read the response body (status %d): %w", method, h.URL, resp.StatusCode, causeOf(ctx, err))
	}
	if len(b) > MaxResponseBytes {
		return 0, nil, "", fmt.Errorf("HTTP %s %s: the response body is over %d bytes, too big for the node's outputs.result (the WorkflowTaskSet and the Workflow carry it): have the server return less", method, h.URL, MaxResponseBytes)
	}
	return resp.StatusCode, resp.Header, string(b), nil
}

// causeOf is err, or the timeout that ended ctx when one did.
func causeOf(ctx context.Context, err error) error {
	var te *timeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te
	}
	return err
}

// secretResource is the core group's Secrets.
func secretResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
}

// secretValue reads key of secret name in the agent's namespace.
func (a *Agent) secretValue(ctx context.Context, name, key string) (string, error) {
	var data map[string]string
	retry := report.Retry{Clock: a.Clock, First: time.Second, MaxDelay: 10 * time.Second, Attempts: 5, Log: a.Log}
	err := retry.Do(ctx, "read secret "+name, func(ctx context.Context) error {
		u, err := a.Client.Resource(secretResource()).Namespace(a.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		data, _, err = unstructured.NestedStringMap(u.Object, "data")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read secret %s/%s: %w%s", a.Namespace, name, err, report.RBACHint(err, "get", "secrets", a.Namespace))
	}
	v, ok := data[key]
	if !ok {
		return "", fmt.Errorf("secret %s/%s has no key %q: add it, or name another key in the header's valueFrom.secretKeyRef", a.Namespace, name, key)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("secret %s/%s: key %q is not base64 as the API server returns it: %w", a.Namespace, name, key, err)
	}
	return string(b), nil
}
