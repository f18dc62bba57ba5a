package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argoexec/argoexec/executor/protocol/native"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func baseEnv() map[string]string {
	return map[string]string{
		wf.EnvPodName:      "wf-1",
		wf.EnvPodNamespace: "ns1",
		wf.EnvPodUID:       "uid-1",
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<unset>" {
			delete(out, kv[i])
			continue
		}
		out[kv[i]] = kv[i+1]
	}
	return out
}

func TestWaitOptionsParsing(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantErr  string // substring; empty means success
		wantCode int
		check    func(t *testing.T, o *WaitOptions)
	}{
		{
			name: "defaults to k8sapi and native sidecars",
			args: []string{"wait"},
			env:  baseEnv(),
			check: func(t *testing.T, o *WaitOptions) {
				n, ok := o.Protocol.(*native.Protocol)
				if o.Backend.Executor != wf.ExecutorK8sAPI || !ok || n.SidecarMode != wf.SidecarModeNative || n.TemplatePath != wf.TemplateFile {
					t.Errorf("got executor %q protocol %+v", o.Backend.Executor, o.Protocol)
				}
				if o.Pod.Name != "wf-1" || o.Pod.Namespace != "ns1" || o.Pod.UID != "uid-1" {
					t.Errorf("pod = %+v", o.Pod)
				}
			},
		},
		{
			name:     "no pod name",
			args:     []string{"wait"},
			env:      with(baseEnv(), wf.EnvPodName, "<unset>"),
			wantErr:  "argoexec wait must run inside a workflow pod: ARGO_POD_NAME is not set",
			wantCode: ExitUsage,
		},
		{
			name:     "unknown executor",
			args:     []string{"wait"},
			env:      with(baseEnv(), wf.EnvContainerRuntimeExecutor, "dokcer"),
			wantErr:  `ARGO_CONTAINER_RUNTIME_EXECUTOR="dokcer" is not an executor (want docker, emissary, k8sapi, kubelet)`,
			wantCode: ExitUsage,
		},
		{
			name:     "kubelet without host",
			args:     []string{"wait"},
			env:      with(baseEnv(), wf.EnvContainerRuntimeExecutor, "kubelet"),
			wantErr:  "the kubelet executor needs ARGO_KUBELET_HOST",
			wantCode: ExitUsage,
		},
		{
			name:     "kubelet port not a number",
			args:     []string{"wait"},
			env:      with(baseEnv(), wf.EnvContainerRuntimeExecutor, "kubelet", wf.EnvKubeletHost, "10.0.0.1", wf.EnvKubeletPort, "http"),
			wantErr:  `ARGO_KUBELET_PORT="http" is not a port number`,
			wantCode: ExitUsage,
		},
		{
			name:     "kubelet port out of range",
			args:     []string{"wait"},
			env:      with(baseEnv(), wf.EnvContainerRuntimeExecutor, "kubelet", wf.EnvKubeletHost, "10.0.0.1", wf.EnvKubeletPort, "70000"),
			wantErr:  "ARGO_KUBELET_PORT=70000 is not a port",
			wantCode: ExitUsage,
		},
		{
			name:     "kubelet insecure not a bool",
			args:     []string{"wait"},
			env:      with(baseEnv(), wf.EnvContainerRuntimeExecutor, "kubelet", wf.EnvKubeletHost, "10.0.0.1", wf.EnvKubeletInsecure, "yes please"),
			wantErr:  `ARGO_KUBELET_INSECURE="yes please" is not a boolean`,
			wantCode: ExitUsage,
		},
		{
			name: "kubelet settings",
			args: []string{"wait"},
			env: with(baseEnv(), wf.EnvContainerRuntimeExecutor, "kubelet", wf.EnvKubeletHost, "10.0.0.1",
				wf.EnvKubeletPort, "10255", wf.EnvKubeletInsecure, "true", wf.EnvKubeletCAFile, "/ca.crt"),
			check: func(t *testing.T, o *WaitOptions) {
				// What the settings parse into is kubelet.ConfigFromEnv's test.
				if o.Backend.Executor != "kubelet" || o.Backend.construct == nil {
					t.Errorf("backend = %+v, want kubelet's, with its constructor", o.Backend)
				}
			},
		},
		{
			name: "flag overrides env executor",
			args: []string{"wait", "--container-runtime-executor", "docker", "--kubeconfig", "/k"},
			env:  with(baseEnv(), wf.EnvContainerRuntimeExecutor, "kubelet"),
			check: func(t *testing.T, o *WaitOptions) {
				if o.Backend.Executor != "docker" || o.Backend.Kubeconfig != "/k" || o.Backend.construct == nil {
					t.Errorf("backend = %+v", o.Backend)
				}
			},
		},
		{
			name:     "bad sidecar mode",
			args:     []string{"wait"},
			env:      with(baseEnv(), wf.EnvSidecarMode, "sometimes"),
			wantErr:  `ARGO_SIDECAR_MODE="sometimes" is not a sidecar mode`,
			wantCode: ExitUsage,
		},
		{
			name:     "bad log level",
			args:     []string{"--loglevel", "loud", "wait"},
			env:      baseEnv(),
			wantErr:  "--loglevel",
			wantCode: ExitUsage,
		},
		{
			name:     "bad log format",
			args:     []string{"--log-format", "xml", "wait"},
			env:      baseEnv(),
			wantErr:  `--log-format: "xml" is not a format`,
			wantCode: ExitUsage,
		},
		{
			name:     "unknown flag",
			args:     []string{"wait", "--nope"},
			env:      baseEnv(),
			wantErr:  "unknown flag: --nope",
			wantCode: ExitUsage,
		},
		{
			name:     "unexpected argument",
			args:     []string{"wait", "extra"},
			env:      baseEnv(),
			wantErr:  `unknown command "extra"`,
			wantCode: ExitUsage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *WaitOptions
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, IO{Out: &bytes.Buffer{}, Err: &stderr, Getenv: envOf(tt.env)}, runners{
				wait: func(_ context.Context, o *WaitOptions) error { got = o; return nil },
				init: func(context.Context, *InitOptions) error { t.Fatal("init ran"); return nil },
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if code := ExitCode(err); code != tt.wantCode {
					t.Errorf("ExitCode = %d, want %d", code, tt.wantCode)
				}
				if !strings.Contains(stderr.String(), tt.wantErr) {
					t.Errorf("stderr %q does not show the error", stderr.String())
				}
				if got != nil {
					t.Errorf("wait ran despite the error")
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if got == nil {
				t.Fatal("wait did not run")
			}
			tt.check(t, got)
		})
	}
}

func TestInitRequiresPod(t *testing.T) {
	err := run(context.Background(), []string{"init"}, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(nil)}, runners{
		init: func(context.Context, *InitOptions) error { t.Fatal("init ran"); return nil },
	})
	if err == nil || err.Error() != "argoexec init must run inside a workflow pod: ARGO_POD_NAME is not set" {
		t.Fatalf("err = %v", err)
	}
}

func TestRunErrorsAreFailures(t *testing.T) {
	boom := errors.New("upload artifact out: connection refused")
	err := run(context.Background(), []string{"wait"}, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(baseEnv())}, runners{
		wait: func(context.Context, *WaitOptions) error { return boom },
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the command's own error", err)
	}
	if code := ExitCode(err); code != ExitFailed {
		t.Errorf("ExitCode = %d, want %d", code, ExitFailed)
	}
	if code := ExitCode(context.Canceled); code != ExitInterrupted {
		t.Errorf("ExitCode(Canceled) = %d, want %d", code, ExitInterrupted)
	}
}

func TestHelpListsCommands(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"--help"}, IO{Out: &out, Err: &out, Getenv: envOf(nil)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"init", "wait", "version", "--loglevel", "--log-format"} {
		if !strings.Contains(out.String(), c) {
			t.Errorf("--help does not list %q:\n%s", c, out.String())
		}
	}
}

func TestInitNeedsNoBackendSettings(t *testing.T) {
	ran := false
	env := with(baseEnv(), wf.EnvContainerRuntimeExecutor, "kubelet")
	err := run(context.Background(), []string{"init"}, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(env)}, runners{
		init: func(context.Context, *InitOptions) error { ran = true; return nil },
	})
	if err != nil || !ran {
		t.Fatalf("init with the kubelet executor and no ARGO_KUBELET_HOST: err %v, ran %v; init uses no backend", err, ran)
	}
}
