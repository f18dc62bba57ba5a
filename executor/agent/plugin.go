package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/argoexec/argoexec/executor/internal/backoff"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// PluginTimeout bounds one call to a plugin, as Argo v3.3.8's agent does.
const PluginTimeout = 30 * time.Second

// pluginBackoff is how a call to a plugin that is not up yet (connection
// refused, 503) is retried: Argo v3.3.8's agent's backoff.
func pluginBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 5}
}

// Plugin is one executor plugin's sidecar in the agent pod.
type Plugin struct {
	// Name is the sidecar's name (ARGO_PLUGIN_NAMES).
	Name string
	// Address is where it listens, http://localhost:PORT (ARGO_PLUGIN_ADDRESSES).
	Address string
	// Token is the bearer token `agent init` wrote for it (TokenFile).
	Token string

	// mu guards notFound.
	mu sync.Mutex
	// notFound records that the plugin answered 404 to template.execute:
	// it is not asked again, as Argo's agent does not ask again.
	notFound bool
}

// TokenFile is where `agent init` writes plugin name's token, under dir
// (/var/run/argo, which the plugin's sidecar mounts with subPath name).
func TokenFile(dir, name string) string { return filepath.Join(dir, name, "token") }

// tokenLetters are the characters of a token.
const tokenLetters = "abcdefghijklmnopqrstuvwxyz0123456789"

// TokenLength is how many characters a plugin's token has, as Argo's.
const TokenLength = 32

// WriteTokens writes, for each plugin name, a random token of TokenLength
// characters drawn from random to TokenFile(dir, name), readable by the
// pod's group only: `argoexec agent init`.
func WriteTokens(dir string, names []string, random io.Reader) error {
	for _, name := range names {
		if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
			return fmt.Errorf("agent init: plugin name %q is not a container name: the agent pod's %s is not what Argo's controller writes", name, wf.EnvArgoPluginNames)
		}
		token, err := randomToken(random)
		if err != nil {
			return fmt.Errorf("agent init: make the token of plugin %s: %w", name, err)
		}
		f := TokenFile(dir, name)
		if err := os.MkdirAll(filepath.Dir(f), 0o770); err != nil {
			return fmt.Errorf("agent init: make the token directory of plugin %s: %w (is %s the agent pod's emptyDir?)", name, err, dir)
		}
		if err := os.WriteFile(f, []byte(token), 0o440); err != nil {
			return fmt.Errorf("agent init: write the token of plugin %s to %s: %w", name, f, err)
		}
	}
	return nil
}

// randomToken draws TokenLength letters of tokenLetters, without bias.
func randomToken(random io.Reader) (string, error) {
	out := make([]byte, 0, TokenLength)
	buf := make([]byte, 64)
	limit := byte(256 - 256%len(tokenLetters))
	for len(out) < TokenLength {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b < limit && len(out) < TokenLength {
				out = append(out, tokenLetters[int(b)%len(tokenLetters)])
			}
		}
	}
	return string(out), nil
}

// ReadTokens returns the plugins named, at the addresses in the same
// order, each with the token `agent init` wrote under dir.
func ReadTokens(dir string, names, addresses []string) ([]*Plugin, error) {
	if len(names) != len(addresses) {
		return nil, fmt.Errorf("agent: %d plugin names (%s) but %d addresses (%s): the agent pod was not built by Argo's controller", len(names), wf.EnvArgoPluginNames, len(addresses), wf.EnvArgoPluginAddresses)
	}
	var out []*Plugin
	for i, name := range names {
		b, err := os.ReadFile(TokenFile(dir, name))
		if err != nil {
			return nil, fmt.Errorf("agent: read the token of plugin %s: %w (`argoexec agent init`, the agent pod's init container, writes it)", name, err)
		}
		out = append(out, &Plugin{Name: name, Address: addresses[i], Token: string(b)})
	}
	return out, nil
}

// executeArgs is the body of template.execute, Argo's ExecuteTemplateArgs.
type executeArgs struct {
	Workflow struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	} `json:"workflow"`
	Template json.RawMessage `json:"template"`
}

// executeReply is Argo's ExecuteTemplateReply.
type executeReply struct {
	Node    *wf.NodeResult   `json:"node,omitempty"`
	Requeue *metav1.Duration `json:"requeue,omitempty"`
}

// runPlugin asks each plugin in turn to run the template, as Argo v3.3.8's
// agent does: the first that returns a node is the result; a requeue in
// its reply asks for another call after that long.
func (a *Agent) runPlugin(ctx context.Context, raw json.RawMessage, log *logrus.Entry) (wf.NodeResult, time.Duration) {
	var args executeArgs
	args.Workflow.Metadata.Name = a.WorkflowName
	args.Template = raw
	body, err := json.Marshal(args)
	if err != nil {
		return wf.NodeResult{Phase: wf.NodeError, Message: fmt.Sprintf("error processing task: encode the plugin call: %v", err)}, 0
	}
	if len(a.Plugins) == 0 {
		return wf.NodeResult{Phase: wf.NodeFailed, Message: "no plugin executed the template: no executor plugin is installed for this workflow's namespace " +
			"(the agent pod has no plugin sidecar; install the plugin's ConfigMap, <name>-executor-plugin, in the workflow's or the controller's namespace)"}, 0
	}
	for _, p := range a.Plugins {
		reply, err := a.callPlugin(ctx, p, body)
		if err != nil {
			return wf.NodeResult{Phase: wf.NodeFailed, Message: err.Error()}, 0
		}
		if reply.Node != nil {
			log.WithField("plugin", p.Name).Info("plugin ran the template")
			var requeue time.Duration
			if reply.Requeue != nil {
				requeue = reply.Requeue.Duration
			}
			return *reply.Node, requeue
		}
	}
	return wf.NodeResult{Phase: wf.NodeFailed, Message: "no plugin executed the template"}, 0
}

// errUnavailable marks a plugin answer worth another try: it is starting.
var errUnavailable = errors.New("the plugin is not ready (503)")

// callPlugin posts body to p's template.execute with its token, retrying
// while the plugin is not up. A plugin that answers 404 is not asked again
// and gives an empty reply.
func (a *Agent) callPlugin(ctx context.Context, p *Plugin, body []byte) (executeReply, error) {
	var reply executeReply
	p.mu.Lock()
	skip := p.notFound
	p.mu.Unlock()
	if skip {
		return reply, nil
	}
	url := p.Address + "/api/v1/template.execute"
	bo := backoff.New(a.Clock, pluginBackoff())
	for attempt := 1; ; attempt++ {
		status, data, err := a.postPlugin(ctx, p, url, body)
		retriable := errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, errUnavailable)
		if err != nil && retriable && attempt < pluginBackoff().Steps {
			if werr := bo.Wait(ctx); werr != nil {
				return reply, fmt.Errorf("plugin %s: POST %s: %w (then: %w)", p.Name, url, err, werr)
			}
			continue
		}
		if err != nil {
			return reply, fmt.Errorf("plugin %s: POST %s: %w (attempt %d)", p.Name, url, err, attempt)
		}
		switch status {
		case http.StatusOK:
			if err := json.Unmarshal(data, &reply); err != nil {
				return reply, fmt.Errorf("plugin %s: POST %s: decode the reply: %w", p.Name, url, err)
			}
			return reply, nil
		case http.StatusNotFound:
			a.Log.WithField("plugin", p.Name).Info("the plugin does not implement template.execute (404): not calling it again")
			p.mu.Lock()
			p.notFound = true
			p.mu.Unlock()
			return reply, nil
		default:
			return reply, fmt.Errorf("plugin %s: POST %s: %d %s: %s", p.Name, url, status, http.StatusText(status), bytes.TrimSpace(data))
		}
	}
}

// postPlugin sends one call and reads its answer, within PluginTimeout.
func (a *Agent) postPlugin(ctx context.Context, p *Plugin, url string, body []byte) (int, []byte, error) {
	ctx, cancel := withTimeout(ctx, a.Clock, PluginTimeout, "a plugin call's limit")
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.Token)
	resp, err := a.clients[false].Do(req)
	if err != nil {
		return 0, nil, causeOf(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return 0, nil, causeOf(ctx, err)
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		return 0, nil, fmt.Errorf("%w: %s", errUnavailable, bytes.TrimSpace(data))
	}
	return resp.StatusCode, data, nil
}
