package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/argoexec/argoexec/executor/internal/podexec"
)

// execURL is the kubelet exec URL for req:
// /exec/{namespace}/{pod}/{container}?command=...&output=1&error=1[&input=1].
// Each argument is one command= parameter, escaped by url.Values. A stream
// is named only when the caller opens it: the kubelet waits for every stream
// the query names, and one the client never opens would hold the session
// until the kubelet's stream-creation timeout.
func (e *Executor) execURL(req podexec.ExecRequest) (*url.URL, error) {
	u, err := url.Parse(e.cfg.baseURL())
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, c := range req.Command {
		q.Add("command", c)
	}
	for param, on := range map[string]bool{"input": req.Stdin, "output": req.Stdout, "error": req.Stderr} {
		if on {
			q.Set(param, "1")
		}
	}
	u.Path = execPath + "/" + e.cfg.Namespace + "/" + e.cfg.PodName + "/" + req.Container
	u.RawQuery = q.Encode()
	return u, nil
}

// execPath is the kubelet's exec endpoint, authorised as nodes/proxy (create
// for SPDY, get for WebSocket) and never as a narrower subresource.
const execPath = "/exec"

// kubeletExecer runs commands through the kubelet's /exec (podexec's
// RemoteExecer: SPDY first, WebSocket where SPDY is refused) and turns
// refusals and certificate failures into errors that say what to fix.
type kubeletExecer struct {
	e      *Executor
	remote *podexec.RemoteExecer
}

// Exec implements podexec.Execer.
func (x *kubeletExecer) Exec(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	// client-go's SPDY path flattens transport errors to text; the round
	// tripper leaves a certificate failure here so errors.As still finds it.
	ctx, failure := withTLSFailure(ctx)
	err := x.remote.Exec(ctx, container, cmd, stdin, stdout, stderr)
	if te := failure.get(); te != nil && err != nil {
		return te
	}
	if x.remote.FellBack() {
		x.e.log.Warnf("kubelet: exec over SPDY was refused, so exec sessions go over WebSocket from now on "+
			"(measured here at half the bytes per second of SPDY); where nothing between this pod and the kubelet "+
			"refuses SPDY, %s lacks RBAC verb \"create\" on resource nodes/proxy: grant it, as manifests/overlays/kubelet does "+
			"(it adds no power to nodes/proxy get, which opens the same exec)", x.e.serviceAccount())
	}
	return x.e.mapExecError(err)
}

// mapExecError explains an exec that the kubelet refused; other errors (an
// exit code, a cancelled ctx, a TLSError) pass through.
//
// Exec over SPDY (POST) is authorised as nodes/proxy create. How the
// WebSocket fallback (GET) is authorised depends on the kubelet: v1.37's
// accepts nodes/proxy get, v1.34's asks for create (docs/compatibility.md).
// The refusal's body names the verb the kubelet checked ("Forbidden
// (user=..., verb=create, resource=nodes, subresource(s)=[proxy])"), so the
// hint names that verb; a body that does not say gives a hint naming both.
func (e *Executor) mapExecError(err error) error {
	if err == nil {
		return nil
	}
	code := execStatus(err)
	if code != http.StatusUnauthorized && code != http.StatusForbidden {
		return err
	}
	verb := refusedVerb(err.Error())
	se := e.newStatusError(code, "", nil, verb, execPath)
	se.Body = truncate(err.Error(), maxErrorBodyShow)
	if code == http.StatusForbidden {
		switch verb {
		case "get":
			se.Hint += "; exec over SPDY, the faster, needs verb \"create\" too"
		case "create":
			se.Hint += "; this kubelet authorises exec over WebSocket as create too, so nodes/proxy get alone cannot exec"
		default:
			se.Hint = fmt.Sprintf("%s lacks RBAC verb \"create\" (exec over SPDY, and over WebSocket on v1.34's kubelet) "+
				"or \"get\" (exec over WebSocket on v1.37's) on resource nodes/proxy: grant nodes/proxy get and create, "+
				"as manifests/overlays/kubelet does (node-wide: it opens /exec on every pod of the node)", e.serviceAccount())
		}
	}
	se.Err = err
	return se
}

// refusedVerb returns the RBAC verb a kubelet's refusal says it checked
// ("verb=create" in its body), or "" when the text does not say. After a
// fallback the text holds both refusals ("SPDY: ...; WebSocket: ..."), and
// the WebSocket one is the kubelet's answer to the exec that was last tried.
func refusedVerb(msg string) string {
	if i := strings.LastIndex(msg, "WebSocket:"); i >= 0 {
		msg = msg[i:]
	}
	_, rest, ok := strings.Cut(msg, "verb=")
	if !ok {
		return ""
	}
	verb, _, _ := strings.Cut(rest, ",")
	switch verb = strings.TrimSpace(verb); verb {
	case "get", "create":
		return verb
	}
	return ""
}

// execStatus returns the HTTP status with which the kubelet refused an exec
// upgrade, or 0.
func execStatus(err error) int {
	// client-go's UpgradeFailureError has no Unwrap: look into its Cause.
	var uf *httpstream.UpgradeFailureError
	if errors.As(err, &uf) {
		err = uf.Cause
	}
	var refused *podexec.UpgradeRefusedError
	if errors.As(err, &refused) {
		return refused.StatusCode
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code)
	}
	if podexec.IsForbidden(err) {
		return http.StatusForbidden
	}
	return 0
}
