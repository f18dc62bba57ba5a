//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoexec/argoexec/cmd/argoexec-step/app"
	"github.com/argoexec/argoexec/manifests"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// TestInstallStandalone runs the README's quick start as a user types it,
// in a namespace of the test's own: `kubectl apply -n NS -k
// manifests/overlays/k8sapi`, the ConfigMap saved with `kubectl get`, its
// image set, then `argoexec-step run` of examples/script-result.yaml
// with the overlay's ServiceAccount. The step must succeed and print its
// result: the install's RBAC and ConfigMap are enough.
func TestInstallStandalone(t *testing.T) {
	f := framework.New(t)
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(f.Context(), installKubectl(), append([]string{"--kubeconfig", f.Env.Kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Logf("$ kubectl apply -n %s -k manifests/overlays/k8sapi\n%s", f.Namespace,
		kubectl("apply", "-n", f.Namespace, "-k", filepath.Join(repoRoot(), "manifests", "overlays", "k8sapi")))
	cm := kubectl("-n", f.Namespace, "get", "configmap", manifests.StandaloneConfigMapName, "-o", "yaml")
	const shipped = "image: argoexec:v0.1.0\n"
	if !strings.Contains(cm, shipped) {
		t.Fatalf("ConfigMap %s has no %q line to set the image in:\n%s", manifests.StandaloneConfigMapName, shipped, cm)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(cm, shipped, "image: "+f.Env.ExecutorImage+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	err := app.Run(f.Context(), []string{"run", "--kubeconfig", f.Env.Kubeconfig, "--namespace", f.Namespace, "--configmap", file,
		"--template", filepath.Join(repoRoot(), "examples", "script-result.yaml"), "--rm", "--timeout", "2m"}, app.IO{Out: &out, Err: &stderr})
	t.Logf("$ argoexec-step run --namespace %s --configmap config.yaml --template examples/script-result.yaml --rm\n%s", f.Namespace, out.String())
	if err != nil {
		t.Fatalf("argoexec-step run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(out.String(), "Succeeded") {
		t.Errorf("run printed no Succeeded phase:\n%s", out.String())
	}
}

// installKubectl is the kubectl a user of the testbed runs: the one on PATH
// (hack/e2e.sh puts the testbed's v1.37.2 first), else the testbed's own.
func installKubectl() string {
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	return "/var/cache/argoexec/bin/kubectl"
}
