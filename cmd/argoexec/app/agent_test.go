package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// agentEnv is what Argo v3.3.8's controller sets on its agent pod
// (workflow/controller/agent.go): no ARGO_TEMPLATE, no pod name.
func agentEnv() map[string]string {
	return map[string]string{
		wf.EnvWorkflowName:        "http-template-abc",
		wf.EnvArgoAgentPatchRate:  "10s",
		wf.EnvArgoPluginAddresses: "null",
		wf.EnvArgoPluginNames:     "null",
	}
}

func TestAgentOptionsParsing(t *testing.T) {
	nsFile := filepath.Join(t.TempDir(), "namespace")
	if err := os.WriteFile(nsFile, []byte("argo-ours\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		nsFile  string
		wantErr string // substring; empty means success
		check   func(t *testing.T, o *AgentOptions)
	}{
		{
			name: "Argo's agent pod, no plugins", args: []string{"agent", "main"}, env: agentEnv(), nsFile: nsFile,
			check: func(t *testing.T, o *AgentOptions) {
				if o.Sub != "main" || o.WorkflowName != "http-template-abc" || o.Namespace != "argo-ours" || o.PatchRate != 10*time.Second ||
					o.TaskWorkers != 0 || o.PluginNames != nil || o.PluginAddresses != nil || o.TokenDir != wf.VarRunArgoPath {
					t.Errorf("options = %+v", o)
				}
			},
		},
		{
			name: "plugins and workers",
			args: []string{"agent", "main"},
			env: with(agentEnv(), wf.EnvArgoPluginNames, `["hello","world"]`, wf.EnvArgoPluginAddresses, `["http://localhost:4355","http://localhost:4356"]`,
				wf.EnvArgoAgentTaskWorkers, "3"),
			nsFile: nsFile,
			check: func(t *testing.T, o *AgentOptions) {
				if !reflect.DeepEqual(o.PluginNames, []string{"hello", "world"}) || !reflect.DeepEqual(o.PluginAddresses, []string{"http://localhost:4355", "http://localhost:4356"}) || o.TaskWorkers != 3 {
					t.Errorf("options = %+v", o)
				}
			},
		},
		{
			name: "flags win", args: []string{"agent", "main", "--namespace", "other", "--token-dir", "/tmp/t"}, env: with(agentEnv(), wf.EnvArgoAgentPatchRate, "<unset>"), nsFile: nsFile,
			check: func(t *testing.T, o *AgentOptions) {
				if o.Namespace != "other" || o.TokenDir != "/tmp/t" || o.PatchRate != 0 {
					t.Errorf("options = %+v", o)
				}
			},
		},
		{
			name: "init needs no workflow", args: []string{"agent", "init"}, env: with(agentEnv(), wf.EnvWorkflowName, "<unset>", wf.EnvArgoPluginNames, `["p"]`, wf.EnvArgoPluginAddresses, `["http://localhost:1"]`),
			check: func(t *testing.T, o *AgentOptions) {
				if o.Sub != "init" || !reflect.DeepEqual(o.PluginNames, []string{"p"}) {
					t.Errorf("options = %+v", o)
				}
			},
		},
		{name: "no workflow name", args: []string{"agent", "main"}, env: with(agentEnv(), wf.EnvWorkflowName, "<unset>"), nsFile: nsFile,
			wantErr: "argoexec agent main must run in an Argo agent pod: ARGO_WORKFLOW_NAME"},
		{name: "no namespace", args: []string{"agent", "main"}, env: agentEnv(), nsFile: filepath.Join(t.TempDir(), "missing"),
			wantErr: "the workflow's namespace is unknown"},
		{name: "names not JSON", args: []string{"agent", "main"}, env: with(agentEnv(), wf.EnvArgoPluginNames, "hello"), nsFile: nsFile,
			wantErr: `ARGO_PLUGIN_NAMES="hello" is not a JSON array of strings`},
		{name: "names and addresses differ", args: []string{"agent", "init"}, env: with(agentEnv(), wf.EnvArgoPluginNames, `["a","b"]`, wf.EnvArgoPluginAddresses, `["http://localhost:1"]`),
			wantErr: "ARGO_PLUGIN_NAMES names 2 plugins but ARGO_PLUGIN_ADDRESSES has 1 addresses"},
		{name: "bad workers", args: []string{"agent", "main"}, env: with(agentEnv(), wf.EnvArgoAgentTaskWorkers, "0"), nsFile: nsFile,
			wantErr: `ARGO_AGENT_TASK_WORKERS="0" is not a positive whole number`},
		{name: "bad patch rate", args: []string{"agent", "main"}, env: with(agentEnv(), wf.EnvArgoAgentPatchRate, "10"), nsFile: nsFile,
			wantErr: `ARGO_AGENT_PATCH_RATE="10" is not a positive Go duration`},
		{name: "agent alone", args: []string{"agent", "nope"}, env: agentEnv(), nsFile: nsFile, wantErr: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *AgentOptions
			capture := func(_ context.Context, o *AgentOptions) error { got = o; return nil }
			err := run(context.Background(), tt.args, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(tt.env), NamespaceFile: tt.nsFile},
				runners{agentInit: capture, agentMain: capture})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if got != nil {
					t.Error("the agent ran despite the error")
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("run: %v (ran %v)", err, got != nil)
			}
			tt.check(t, got)
		})
	}
}
