package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/argoexec/argoexec/executor/protocol"
	"github.com/argoexec/argoexec/executor/protocol/argo"
	"github.com/argoexec/argoexec/executor/protocol/native"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// argoEnv is the environment Argo Workflows v3.3.8's controller gives wait
// on the kubelet executor (argo-v3.3-protocol.md §1.5).
func argoEnv() map[string]string {
	return map[string]string{
		wf.EnvPodName:                  "hello-world-abc",
		wf.EnvPodUID:                   "uid-1",
		wf.EnvContainerRuntimeExecutor: "kubelet",
		"GODEBUG":                      "x509ignoreCN=0",
		wf.EnvWorkflowName:             "hello-world-abc",
		wf.EnvKubeletHost:              "10.88.0.1",
		wf.EnvKubeletPort:              "0",
		wf.EnvKubeletInsecure:          "false",
		wf.EnvArgoContainerName:        "wait",
		wf.EnvArgoTemplate:             `{"name":"whalesay","inputs":{},"outputs":{},"metadata":{},"container":{"name":"","image":"docker/whalesay:latest","command":["cowsay"],"args":["hello world"],"resources":{}}}`,
		wf.EnvArgoNodeID:               "hello-world-abc",
		wf.EnvArgoIncludeScriptOutput:  "false",
		wf.EnvArgoDeadline:             "0001-01-01T00:00:00Z",
		wf.EnvArgoProgressFile:         "/var/run/argo/progress",
		wf.EnvPodNamespace:             "<unset>",
	}
}

func TestArgoProtocolOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, o *WaitOptions)
	}{
		{
			name: "Argo's environment selects its protocol; the zero deadline none",
			args: []string{"wait", "--loglevel", "info", "--gloglevel", "0"},
			env:  argoEnv(),
			check: func(t *testing.T, o *WaitOptions) {
				a, ok := o.Protocol.(*argo.Protocol)
				if !ok || a.NodeID != "hello-world-abc" || !a.Deadline.IsZero() || a.IncludeScriptOutput {
					t.Fatalf("protocol %s %+v", o.Protocol.Name(), o.Protocol)
				}
				if o.Pod.Namespace != "argo" {
					t.Errorf("namespace = %q, want the service account's", o.Pod.Namespace)
				}
				tmpl, err := o.Protocol.Template(o.TemplatePath)
				if err != nil || tmpl.Container == nil || tmpl.Container.Image != "docker/whalesay:latest" {
					t.Fatalf("template %+v, %v", tmpl, err)
				}
				a.ScratchRoot = t.TempDir()
				parts, err := a.Flow(protocol.Request{Command: "wait", Template: tmpl, Log: logrus.NewEntry(logrus.New())})
				if err != nil {
					t.Fatal(err)
				}
				if parts.Config.SidecarMode != wf.SidecarModeLegacy {
					t.Errorf("sidecar mode = %q: Argo injects sidecars as plain containers, wait must stop them", parts.Config.SidecarMode)
				}
			},
		},
		{
			name: "a deadline is parsed",
			args: []string{"wait"},
			env: with(argoEnv(), wf.EnvArgoDeadline, "2026-12-01T10:00:00Z", wf.EnvArgoIncludeScriptOutput, "true",
				wf.EnvArgoProgressFileTick, "3s", wf.EnvArgoProgressPatchTick, "1m0s"),
			check: func(t *testing.T, o *WaitOptions) {
				a := o.Protocol.(*argo.Protocol)
				if !a.Deadline.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) || !a.IncludeScriptOutput ||
					a.ProgressFile != "/var/run/argo/progress" || a.ProgressFileTick != 3*time.Second || a.ProgressPatchTick != time.Minute {
					t.Errorf("argo %+v", a)
				}
			},
		},
		{
			name:    "a bad deadline names the variable",
			args:    []string{"wait"},
			env:     with(argoEnv(), wf.EnvArgoDeadline, "tomorrow"),
			wantErr: `ARGO_DEADLINE="tomorrow" is not an RFC 3339 time`,
		},
		{
			name: "Argo's default emissary executor is accepted",
			args: []string{"wait"},
			env:  with(argoEnv(), wf.EnvContainerRuntimeExecutor, "emissary"),
			check: func(t *testing.T, o *WaitOptions) {
				if o.Backend.Executor != "emissary" {
					t.Errorf("executor = %q", o.Backend.Executor)
				}
			},
		},
		{
			name:    "Argo's pns executor is refused with what to set",
			args:    []string{"wait"},
			env:     with(argoEnv(), wf.EnvContainerRuntimeExecutor, "pns"),
			wantErr: "argoexec does not implement Argo's pns executor; set containerRuntimeExecutor to one of docker, emissary, k8sapi, kubelet",
		},
		{
			name: "the pod's termination grace bounds sidecar kills",
			args: []string{"wait"},
			env:  with(argoEnv(), wf.EnvArgoTerminationGrace, "45"),
			check: func(t *testing.T, o *WaitOptions) {
				if o.KillGrace != 45*time.Second {
					t.Errorf("KillGrace = %v, want 45s", o.KillGrace)
				}
			},
		},
		{
			name:    "a bad progress tick names the variable",
			args:    []string{"wait"},
			env:     with(argoEnv(), wf.EnvArgoProgressFileTick, "often"),
			wantErr: `ARGO_PROGRESS_FILE_TICK_DURATION="often" is not a duration`,
		},
		{
			name:    "a mix of both protocols is refused, naming the variables",
			args:    []string{"wait"},
			env:     with(argoEnv(), wf.EnvTemplatePath, "/argo/podmetadata/template", wf.EnvSidecarMode, "native"),
			wantErr: "mixes the argo-v3.3 controller protocol (ARGO_TEMPLATE, ARGO_NODE_ID, ARGO_INCLUDE_SCRIPT_OUTPUT, ARGO_DEADLINE) with the argoexec one (ARGO_TEMPLATE_PATH, ARGO_SIDECAR_MODE)",
		},
		{
			name:    "Argo's variables without the template",
			args:    []string{"wait"},
			env:     with(argoEnv(), wf.EnvArgoTemplate, "<unset>"),
			wantErr: "set but not ARGO_TEMPLATE",
		},
		{
			name:    "wait needs the node ID",
			args:    []string{"wait"},
			env:     with(argoEnv(), wf.EnvArgoNodeID, "<unset>"),
			wantErr: "ARGO_NODE_ID is not set",
		},
		{
			name: "our own environment keeps our protocol",
			args: []string{"wait"},
			env:  baseEnv(),
			check: func(t *testing.T, o *WaitOptions) {
				n, ok := o.Protocol.(*native.Protocol)
				if !ok || n.TemplatePath != wf.TemplateFile || o.TemplatePath != "" {
					t.Errorf("protocol %s %+v, --template %q", o.Protocol.Name(), o.Protocol, o.TemplatePath)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range tt.env {
				if v != "<unset>" {
					env[k] = v
				}
			}
			var got *WaitOptions
			nsFile := filepath.Join(t.TempDir(), "namespace")
			if err := os.WriteFile(nsFile, []byte("argo\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := run(context.Background(), tt.args, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(env), NamespaceFile: nsFile}, runners{
				wait: func(_ context.Context, o *WaitOptions) error { got = o; return nil },
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if ExitCode(err) != ExitUsage {
					t.Errorf("exit code %d, want %d", ExitCode(err), ExitUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

// fakeProtocol is a third controller's protocol, claimed by its own variable.
type fakeProtocol struct {
	protocol.Protocol // methods the detection does not call panic
	completed         bool
}

func (*fakeProtocol) Name() string                                 { return "fake" }
func (*fakeProtocol) OwnEnv() []string                             { return []string{"FAKE_TEMPLATE"} }
func (f *fakeProtocol) Complete(string, func(string) string) error { f.completed = true; return nil }

// TestDetectProtocol: a protocol is picked by its own variables alone, so
// a new one is one more entry in the list; a mix is refused.
func TestDetectProtocol(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "the fake's variable picks it", env: map[string]string{"FAKE_TEMPLATE": "{}"}, want: "fake"},
		{name: "none set: the last, ours", env: map[string]string{}, want: native.Name},
		{name: "Argo's", env: map[string]string{wf.EnvArgoTemplate: "{}"}, want: argo.Name},
		{name: "a mix", env: map[string]string{"FAKE_TEMPLATE": "{}", wf.EnvTemplatePath: "/t"}, wantErr: "mixes the fake controller protocol (FAKE_TEMPLATE) with the argoexec one (ARGO_TEMPLATE_PATH)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeProtocol{}
			got, err := detectProtocol("wait", envOf(tt.env), []protocol.Protocol{fake, &argo.Protocol{}, &native.Protocol{}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || ExitCode(err) != ExitUsage {
					t.Fatalf("err = %v (exit %d), want a usage error containing %q", err, ExitCode(err), tt.wantErr)
				}
				return
			}
			if err != nil || got.Name() != tt.want {
				t.Fatalf("got %v, %v; want %s", got, err, tt.want)
			}
			if tt.want == "fake" && !fake.completed {
				t.Error("the picked protocol was not completed from the environment")
			}
		})
	}
}
