package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteTerminationMessage(t *testing.T) {
	long := strings.Repeat("x", 10000)
	tests := []struct {
		name    string
		create  bool
		err     error
		want    string // exact; "" with create means the file stays empty
		wantCut bool
	}{
		{name: "short error written whole", create: true, err: errors.New("collect output parameters: output parameter \"p\": /tmp/p does not exist"), want: "collect output parameters: output parameter \"p\": /tmp/p does not exist"},
		{name: "long error cut under the kubelet's limit, saying so", create: true, err: errors.New(long), wantCut: true},
		{name: "outside a pod the file is absent: nothing written", create: false, err: errors.New("boom")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "termination-log")
			if tt.create {
				if err := os.WriteFile(p, []byte("stale"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeTerminationMessage(p, tt.err); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if !tt.create {
				if err == nil {
					t.Errorf("created %s outside a pod", p)
				}
				return
			}
			got := string(b)
			switch {
			case tt.wantCut:
				if len(got) > maxTerminationMessage || !strings.Contains(got, "bytes cut; the whole error is in the container's log") || !strings.HasPrefix(got, "xxxx") {
					t.Errorf("cut message is %d bytes: %q...", len(got), got[len(got)-80:])
				}
			case got != tt.want:
				t.Errorf("message = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEveryFailureReachesTheTerminationMessage: whatever command fails,
// and whether it fails in its flow or before it starts (environment,
// flags), the error that Run returns is what the container's termination
// message says, so the controller and `kubectl describe` show it.
func TestEveryFailureReachesTheTerminationMessage(t *testing.T) {
	boom := errors.New("input artifact \"in\": entry out/root links to / outside the artifact")
	r := runners{
		init:     func(context.Context, *InitOptions) error { return boom },
		wait:     func(context.Context, *WaitOptions) error { return boom },
		resource: func(context.Context, *ResourceOptions) error { return boom },
		data:     func(context.Context, *DataOptions) error { return boom },
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "init's flow", args: []string{"init"}, env: baseEnv(), want: boom.Error()},
		{name: "wait's flow", args: []string{"wait"}, env: baseEnv(), want: boom.Error()},
		{name: "resource's flow", args: []string{"resource", "create"}, env: argoResourceEnv(), want: boom.Error()},
		{name: "data's flow", args: []string{"data", "{}"}, env: baseEnv(), want: boom.Error()},
		{name: "init outside a workflow pod, before the flow", args: []string{"init"}, env: nil, want: "ARGO_POD_NAME is not set"},
		{name: "a bad flag, before the flow", args: []string{"init", "--loglevel", "loud"}, env: baseEnv(), want: "loud"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "termination-log")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ns := filepath.Join(t.TempDir(), "namespace")
			if err := os.WriteFile(ns, []byte("ns1"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := run(context.Background(), tt.args, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(tt.env), TerminationLog: p, NamespaceFile: ns}, r)
			if err == nil {
				t.Fatal("run succeeded")
			}
			b, rerr := os.ReadFile(p)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if string(b) != err.Error() || !strings.Contains(string(b), tt.want) {
				t.Errorf("termination message %q; want the error %q, which contains %q", b, err, tt.want)
			}
		})
	}
}

// TestWaitUnfinishedMessage: while wait runs, its termination message says
// it did not finish (what a SIGKILLed wait leaves for the controller); a
// wait that succeeds leaves it empty, one that fails leaves its error.
func TestWaitUnfinishedMessage(t *testing.T) {
	boom := errors.New("report outputs: 503")
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{name: "succeeds", want: ""},
		{name: "fails", err: boom, want: boom.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "termination-log")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ns := filepath.Join(t.TempDir(), "namespace")
			if err := os.WriteFile(ns, []byte("ns1"), 0o644); err != nil {
				t.Fatal(err)
			}
			var during string
			r := runners{wait: func(_ context.Context, o *WaitOptions) error {
				return untilFinished(o.TerminationLog, o.Log, func() error {
					b, _ := os.ReadFile(p)
					during = string(b)
					return tt.err
				})
			}}
			_ = run(context.Background(), []string{"wait"}, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(baseEnv()), TerminationLog: p, NamespaceFile: ns}, r)
			if !strings.Contains(during, "argoexec wait was stopped before it finished") {
				t.Errorf("termination message while wait runs = %q, want it to say wait did not finish", during)
			}
			if b, _ := os.ReadFile(p); string(b) != tt.want {
				t.Errorf("termination message after = %q, want %q", b, tt.want)
			}
		})
	}
}
