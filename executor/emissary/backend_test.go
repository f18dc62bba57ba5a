package emissary_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/backends"
	"github.com/argoexec/argoexec/executor/emissary"
	"github.com/argoexec/argoexec/executor/emissary/wrapper"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// TestBuiltPodRunsUnderTheWrapper runs main as the pod that podspec.Build
// makes for emissary says: the template init stages (the pod's template
// annotation), main's command after the wrapper's prefix and its args, its
// ARGO_CONTAINER_NAME, the script annotation. The wrapper then runs the
// child, copies its output from outside any volume and keeps a script's
// stdout, and the backend reads the exit code, the output and the stdout
// from the shared volume.
func TestBuiltPodRunsUnderTheWrapper(t *testing.T) {
	dir := t.TempDir()
	answer := filepath.Join(dir, "answer")
	for _, tc := range []struct {
		name, template string
		wantCode       int
		wantParam      string // the copy of answer wait reads; "" skips the check
		wantStdout     string // main's kept stdout; "" skips the check
	}{
		{name: "container, output outside a volume",
			template: `{"name":"c","container":{"image":"busybox","command":["sh","-c"],"args":["echo 42 > ` + answer + `; exit 3"]},` +
				`"outputs":{"parameters":[{"name":"answer","valueFrom":{"path":"` + answer + `"}}]}}`,
			wantCode: 3, wantParam: "42\n"},
		{name: "script, its stdout kept",
			template:   `{"name":"s","script":{"image":"busybox","command":["sh"],"source":"echo hello; exit 0"}}`,
			wantStdout: "hello\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := wf.DecodeTemplate([]byte(tc.template))
			if err != nil {
				t.Fatal(err)
			}
			cfg := config.Default()
			cfg.ContainerRuntimeExecutor = emissary.ExecutorEmissary
			pod, err := podspec.Build(cfg, backends.All().Pods(), tmpl, podspec.Meta{PodName: "p"})
			if err != nil {
				t.Fatal(err)
			}
			main := mainOf(t, pod)
			prefix := []string{emissary.WrapperPath, "emissary", "--"}
			if len(main.Command) <= len(prefix) || !slices.Equal(main.Command[:len(prefix)], prefix) {
				t.Fatalf("main's command %q does not start with %q", main.Command, prefix)
			}
			name := ""
			for _, e := range main.Env {
				if e.Name == wf.EnvArgoContainerName {
					name = e.Value
				}
			}

			root := t.TempDir()
			self := filepath.Join(t.TempDir(), "argoexec")
			if err := os.WriteFile(self, []byte("a stand-in for the binary"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := wrapper.Stage(root, self, pod.Annotations[wf.AnnotationTemplate]); err != nil {
				t.Fatalf("Stage: %v", err)
			}
			l := logrus.New()
			l.SetOutput(io.Discard)
			log := logrus.NewEntry(l)
			args := slices.Clone(main.Args)
			if i := slices.Index(args, wf.ScriptSourcePath); i >= 0 {
				// The pod projects the script annotation there; here it is a file of its own.
				args[i] = filepath.Join(t.TempDir(), "script")
				if err := os.WriteFile(args[i], []byte(pod.Annotations[wf.AnnotationScript]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, err := wrapper.Run(ctx(t), wrapper.Config{Root: root, Name: name, Command: append(main.Command[len(prefix):], args...),
				Env: []string{"PATH=" + os.Getenv("PATH")}, Stdout: io.Discard, Stderr: io.Discard}, log)
			if err != nil {
				t.Fatalf("wrapper.Run: %v", err)
			}

			x, err := emissary.New(emissary.Config{Root: root}, log)
			if err != nil {
				t.Fatal(err)
			}
			if err := x.Wait(ctx(t), []string{wf.MainContainerName}); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			got, err := x.GetExitCode(ctx(t), wf.MainContainerName)
			if err != nil || got != code || got != tc.wantCode {
				t.Errorf("exit code file %d (%v), wrapper returned %d; want %d", got, err, code, tc.wantCode)
			}
			if tc.wantParam != "" {
				if v, err := x.GetFileContents(ctx(t), wf.MainContainerName, answer); err != nil || v != tc.wantParam {
					t.Errorf("output parameter = %q, %v; want %q", v, err, tc.wantParam)
				}
			}
			if tc.wantStdout != "" {
				rc, err := x.GetOutputStream(ctx(t), wf.MainContainerName, false)
				if err != nil {
					t.Fatalf("main's stdout is not kept: %v", err)
				}
				defer rc.Close()
				if b, _ := io.ReadAll(rc); string(b) != tc.wantStdout {
					t.Errorf("main's stdout = %q, want %q", b, tc.wantStdout)
				}
			}
		})
	}
}

func mainOf(t *testing.T, pod *corev1.Pod) *corev1.Container {
	t.Helper()
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == wf.MainContainerName {
			return &pod.Spec.Containers[i]
		}
	}
	t.Fatalf("no main in %+v", pod.Spec.Containers)
	return nil
}
