package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/argoexec/argoexec/pkg/cli"
)

func TestEmissaryCommand(t *testing.T) {
	const tmpl = `{"container":{"image":"busybox","command":["sh"]},"outputs":{"parameters":[{"name":"p","valueFrom":{"path":"PARAM"}}]}}`
	tests := []struct {
		name         string
		env          map[string]string
		templateFile bool
		script       string
		wantExit     int // -1: Exit not called
		wantParam    bool
		wantTermLog  string
	}{
		{name: "child's code is the exit code", env: map[string]string{"ARGO_CONTAINER_NAME": "main"}, templateFile: true, script: "echo v > PARAM; exit 3", wantExit: 3, wantParam: true},
		{name: "success does not exit", env: map[string]string{"ARGO_CONTAINER_NAME": "main"}, templateFile: true, script: "exit 0", wantExit: -1},
		{name: "ARGO_TEMPLATE when init wrote no file", env: map[string]string{"ARGO_CONTAINER_NAME": "main", "ARGO_TEMPLATE": tmpl}, script: "echo v > PARAM", wantExit: -1, wantParam: true},
		{name: "no container name: 64 and the termination message", env: map[string]string{}, templateFile: true, script: "exit 0", wantExit: 64, wantTermLog: "ARGO_CONTAINER_NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			param := filepath.Join(t.TempDir(), "param")
			if tt.templateFile {
				os.WriteFile(filepath.Join(root, "template"), []byte(strings.ReplaceAll(tmpl, "PARAM", param)), 0o444)
			}
			env := map[string]string{}
			for k, v := range tt.env {
				env[k] = strings.ReplaceAll(v, "PARAM", param)
			}
			termLog := filepath.Join(t.TempDir(), "termination-log")
			os.WriteFile(termLog, nil, 0o644)
			exit := -1
			stdio := IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: func(k string) string { return env[k] }, TerminationLog: termLog}
			g := &globalOptions{}
			root2 := &cobra.Command{Use: "argoexec"}
			g.addFlags(root2.PersistentFlags())
			root2.AddCommand(newEmissaryCmdExit(context.Background(), g, stdio, func(c int) { exit = c }))
			err := cli.Execute(root2, []string{"emissary", "--var-run-argo", root, "--", "sh", "-c", strings.ReplaceAll(tt.script, "PARAM", param)}, stdio.Out, stdio.Err)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if exit != tt.wantExit {
				t.Errorf("exit = %d, want %d (stderr %s)", exit, tt.wantExit, stdio.Err)
			}
			_, perr := os.Stat(filepath.Join(root, "outputs", "parameters", param))
			if (perr == nil) != tt.wantParam {
				t.Errorf("parameter copied = %v, want %v", perr == nil, tt.wantParam)
			}
			b, _ := os.ReadFile(termLog)
			if !strings.Contains(string(b), tt.wantTermLog) || (tt.wantTermLog == "" && len(b) > 0) {
				t.Errorf("termination log = %q, want %q", b, tt.wantTermLog)
			}
		})
	}
}
