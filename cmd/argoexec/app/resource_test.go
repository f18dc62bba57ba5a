package app

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/argoexec/argoexec/executor/protocol/argo"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// argoResourceEnv is what Argo v3.3.8's controller gives the main container
// of a resource template (no wait container; emissary as the executor).
func argoResourceEnv() map[string]string {
	return with(argoEnv(),
		wf.EnvContainerRuntimeExecutor, "emissary",
		wf.EnvArgoContainerName, "main",
		wf.EnvArgoTemplate, `{"name":"pi-tmpl","inputs":{},"outputs":{},"metadata":{},"resource":{"action":"create","manifest":"apiVersion: v1\nkind: ConfigMap\n"}}`,
		wf.EnvArgoDeadline, "2026-01-02T15:04:05Z",
		wf.EnvKubeletHost, "<unset>", wf.EnvKubeletPort, "<unset>", wf.EnvKubeletInsecure, "<unset>", wf.EnvPodNamespace, "<unset>",
	)
}

func TestResourceOptions(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, o *ResourceOptions)
	}{
		{
			name: "Argo's resource pod",
			args: []string{"resource", "create"},
			env:  argoResourceEnv(),
			check: func(t *testing.T, o *ResourceOptions) {
				a, ok := o.Protocol.(*argo.Protocol)
				if o.Action != "create" || !ok || a.NodeID != "hello-world-abc" || o.PollInterval != 0 {
					t.Fatalf("options = %+v", o)
				}
				if want := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC); !a.Deadline.Equal(want) {
					t.Errorf("deadline = %v, want %v", a.Deadline, want)
				}
				tmpl, err := o.Protocol.Template(o.TemplatePath)
				if err != nil || tmpl.Resource == nil || tmpl.Resource.Action != "create" {
					t.Errorf("template = %+v, %v", tmpl, err)
				}
			},
		},
		{
			name:  "RESOURCE_STATE_CHECK_INTERVAL",
			args:  []string{"resource", "get"},
			env:   with(argoResourceEnv(), EnvResourceStateCheckInterval, "2s"),
			check: func(t *testing.T, o *ResourceOptions) { assertEqual(t, o.PollInterval, 2*time.Second) },
		},
		{name: "bad interval", args: []string{"resource", "get"}, env: with(argoResourceEnv(), EnvResourceStateCheckInterval, "soon"),
			wantErr: `RESOURCE_STATE_CHECK_INTERVAL="soon" is not a positive duration`},
		{name: "no action", args: []string{"resource"}, env: argoResourceEnv(), wantErr: "takes one ACTION, got 0 arguments: want one of get, create"},
		{name: "no node ID", args: []string{"resource", "get"}, env: with(argoResourceEnv(), wf.EnvArgoNodeID, "<unset>"),
			wantErr: "argoexec resource: ARGO_NODE_ID is not set"},
		{name: "no pod", args: []string{"resource", "get"}, env: with(argoResourceEnv(), wf.EnvPodName, "<unset>"),
			wantErr: "argoexec resource must run inside a workflow pod: ARGO_POD_NAME is not set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got *ResourceOptions
			dir := t.TempDir()
			nsFile := dir + "/namespace"
			if err := os.WriteFile(nsFile, []byte("argo\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := run(context.Background(), tt.args, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(tt.env), NamespaceFile: nsFile}, runners{
				resource: func(_ context.Context, o *ResourceOptions) error { got = o; return nil },
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if ExitCode(err) != ExitUsage || got != nil {
					t.Errorf("ExitCode = %d, ran = %v; want a usage error before any work", ExitCode(err), got != nil)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("run: %v (ran %v)", err, got != nil)
			}
			if got.Pod.Namespace != "argo" {
				t.Errorf("namespace = %q, want the service account's", got.Pod.Namespace)
			}
			tt.check(t, got)
		})
	}
}

func assertEqual[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}
