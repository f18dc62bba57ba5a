package backends

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// overlays is manifests/overlays, from this package's directory.
var overlays = filepath.Join("..", "..", "manifests", "overlays")

// TestRegistrationsComplete checks every registered backend: a name the
// ConfigMap can spell, given once; a pod shape; a constructor that reads
// a pod's environment; an RBAC overlay that exists; an init hook (Stage)
// exactly when its pods ask for init (NeedsInit), so that the hook runs in
// every pod and init never exists for nothing. And every overlay belongs
// to a registered backend, so none is left behind.
func TestRegistrationsComplete(t *testing.T) {
	// env is what the pod builder gives wait for each backend (the
	// downward API's values filled in).
	env := map[string]string{
		workflow.EnvKubeletHost: "10.0.0.1", workflow.EnvKubeletPort: "10250", workflow.EnvKubeletInsecure: "false",
		workflow.EnvDockerSockPath: workflow.DefaultDockerSockPath,
	}
	all := All()
	if len(all) == 0 {
		t.Fatal("no backend is registered")
	}
	seen := map[string]bool{}
	for _, r := range all {
		t.Run(r.Name(), func(t *testing.T) {
			switch {
			case r.Pod == nil:
				t.Fatal("no pod shape")
			case r.Name() == "" || seen[r.Name()]:
				t.Fatalf("name %q is empty or registered twice", r.Name())
			case r.FromEnv == nil:
				t.Fatal("no constructor")
			case r.Overlay == "":
				t.Fatal("no RBAC overlay")
			case (r.Stage != nil) != r.Pod.NeedsInit(config.Default()):
				t.Fatalf("Stage set: %v, but the pod shape's NeedsInit (default configuration): %v; a backend with an init hook needs init in every pod it shapes with one", r.Stage != nil, r.Pod.NeedsInit(config.Default()))
			}
			seen[r.Name()] = true
			if _, err := os.Stat(filepath.Join(overlays, r.Overlay, "kustomization.yaml")); err != nil {
				t.Errorf("overlay %s: %v", r.Overlay, err)
			}
			construct, err := r.FromEnv(backend.Env{
				Getenv: func(k string) string { return env[k] }, Namespace: "ns", PodName: "pod", PodUID: "uid",
			})
			if err != nil || construct == nil {
				t.Errorf("FromEnv with the pod builder's env = %v, %v; want a constructor", construct != nil, err)
			}
		})
	}
	dirs, err := os.ReadDir(overlays)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !slices.ContainsFunc(all, func(r backend.Registration) bool { return r.Overlay == d.Name() }) {
			t.Errorf("manifests/overlays/%s belongs to no registered backend", d.Name())
		}
	}
	if names := all.Names(); !slices.IsSorted(names) || len(names) != len(all) {
		t.Errorf("Names() = %v", names)
	}
	if _, ok := all.Find("nope"); ok {
		t.Error("Find found an unregistered backend")
	}
}
