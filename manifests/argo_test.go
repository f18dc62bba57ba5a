package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/executor/backends"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// argoDeployment is the workflow-controller Deployment of Argo v3.3.8's
// namespace-install, reduced to what the executor component touches.
const argoDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: workflow-controller
spec:
  selector: {matchLabels: {app: workflow-controller}}
  template:
    metadata: {labels: {app: workflow-controller}}
    spec:
      containers:
      - name: workflow-controller
        image: quay.io/argoproj/workflow-controller:v3.3.8
        command: [workflow-controller]
        args: [--configmap, workflow-controller-configmap, --executor-image, quay.io/argoproj/argoexec:v3.3.8, --namespaced]
`

// buildOverArgo builds, as a user's kustomization would, Argo's install
// (deployment and Argo's quick-start ConfigMap) with the given components of
// manifests/argo, in namespace ns.
func buildOverArgo(t *testing.T, ns, deployment string, components ...string) (map[string][]byte, error) {
	t.Helper()
	dir := t.TempDir()
	cm, err := os.ReadFile("../pkg/config/testdata/argo-v3.3.8-quick-start-configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var comps []string
	for _, c := range components {
		abs, err := filepath.Abs(filepath.Join("argo", c))
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(dir, abs) // kustomize takes no absolute roots
		if err != nil {
			t.Fatal(err)
		}
		comps = append(comps, rel)
	}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns +
		"\nresources: [deployment.yaml, configmap.yaml]\ncomponents: [" + strings.Join(comps, ", ") + "]\n"
	for name, data := range map[string]string{"kustomization.yaml": kust, "deployment.yaml": deployment, "configmap.yaml": string(cm)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, r := range res.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		out[r.GetKind()+"/"+r.GetName()] = data
	}
	return out, nil
}

func decode[T any](t *testing.T, objs map[string][]byte, key string) *T {
	t.Helper()
	data, ok := objs[key]
	if !ok {
		t.Fatalf("no %s in the build (have %v)", key, slices.Sorted(func(yield func(string) bool) {
			for k := range objs {
				if !yield(k) {
					return
				}
			}
		}))
	}
	var v T
	if err := workflow.DecodeStrict(data, &v); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return &v
}

// TestArgoComponents builds manifests/argo's components over Argo's own
// install: the ConfigMap keeps Argo's keys, gains argoexec's executor and
// loads in argoexec's own strict loader; the Deployment loses the flag that
// would win over it; each backend's RBAC is bound in the namespace.
func TestArgoComponents(t *testing.T) {
	objs, err := buildOverArgo(t, "wf", argoDeployment, "executor", "k8sapi", "kubelet", "agent")
	if err != nil {
		t.Fatal(err)
	}
	cm := decode[corev1.ConfigMap](t, objs, "ConfigMap/workflow-controller-configmap")
	for _, k := range []string{"artifactRepository", "containerRuntimeExecutors", "images", "links"} {
		if _, ok := cm.Data[k]; !ok {
			t.Errorf("ConfigMap lost Argo's key %s", k)
		}
	}
	cfg, err := config.FromConfigMap(cm, backends.All().Config())
	if err != nil {
		t.Fatalf("the merged ConfigMap does not load: %v", err)
	}
	if !strings.HasSuffix(cfg.Executor.Image, "-argo") {
		t.Errorf("executor image %q, want the -argo image", cfg.Executor.Image)
	}
	// the user's executor choice stays: the quick-start names none (Argo's default, emissary)
	if v, ok := cm.Data["containerRuntimeExecutor"]; ok {
		t.Errorf("containerRuntimeExecutor %q set over Argo's default (emissary)", v)
	}
	if sc := cfg.Executor.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.Capabilities == nil {
		t.Errorf("executor securityContext = %+v, want the restricted fields", sc)
	}
	dep := decode[appsv1.Deployment](t, objs, "Deployment/workflow-controller")
	if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, []string{"--configmap", "workflow-controller-configmap", "--namespaced"}) {
		t.Errorf("controller args = %v, want --executor-image and its value removed", args)
	}
	for _, tc := range []struct {
		role   string
		grants []string
	}{
		{"argoexec-executor-k8sapi", []string{"pods/exec:create", "pods/log:get", "pods:get", "pods:patch", "pods:watch", "workflowtaskresults:create", "workflowtaskresults:patch"}},
		{"argoexec-executor-kubelet", []string{"pods:get", "pods:patch", "workflowtaskresults:create", "workflowtaskresults:patch"}},
		// Argo's agent Role (HTTP templates), plus secrets get for headers from secrets.
		{"argoexec-agent", []string{"secrets:get", "workflowtasksets/status:patch", "workflowtasksets:list", "workflowtasksets:watch"}},
	} {
		r := decode[rbacv1.Role](t, objs, "Role/"+tc.role)
		if got := grants(r.Rules); !slices.Equal(got, tc.grants) || r.Namespace != "wf" {
			t.Errorf("Role %s/%s grants %v, want %v in wf", r.Namespace, r.Name, got, tc.grants)
		}
		b := decode[rbacv1.RoleBinding](t, objs, "RoleBinding/"+tc.role)
		if b.RoleRef.Name != tc.role || len(b.Subjects) != 1 || b.Subjects[0].Name != "default" {
			t.Errorf("RoleBinding %s = %+v", tc.role, b)
		}
	}
	// Argo v3.3.8's controller mounts serviceAccount.secrets[0] into the agent pod: the
	// component makes the legacy token Secret that Kubernetes >= 1.24 no longer makes.
	sec := decode[corev1.Secret](t, objs, "Secret/default-agent-token")
	sa := decode[corev1.ServiceAccount](t, objs, "ServiceAccount/default")
	if sec.Type != corev1.SecretTypeServiceAccountToken || sec.Annotations[corev1.ServiceAccountNameKey] != "default" ||
		len(sa.Secrets) != 1 || sa.Secrets[0].Name != sec.Name || sa.Namespace != "wf" || sec.Namespace != "wf" {
		t.Errorf("token Secret %+v, ServiceAccount %+v: want default's token Secret, listed first", sec.ObjectMeta, sa)
	}
	cr := decode[rbacv1.ClusterRole](t, objs, "ClusterRole/argoexec-executor-kubelet")
	if got := grants(cr.Rules); !slices.Equal(got, []string{"nodes/pods:get", "nodes/proxy:create", "nodes/proxy:get"}) {
		t.Errorf("ClusterRole grants %v", got)
	}
	crb := decode[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding/argoexec-executor-kubelet")
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != "default" || crb.Subjects[0].Namespace != "wf" {
		t.Errorf("ClusterRoleBinding subjects = %+v, want wf/default (the kustomization's namespace)", crb.Subjects)
	}
}

// TestArgoComponentRefusesOtherLayout: a Deployment whose arguments are not
// Argo v3.3's layout fails the build instead of losing another argument.
func TestArgoComponentRefusesOtherLayout(t *testing.T) {
	other := strings.Replace(argoDeployment, "args: [--configmap, workflow-controller-configmap, --executor-image, quay.io/argoproj/argoexec:v3.3.8, --namespaced]",
		"args: [--configmap, workflow-controller-configmap, --namespaced, --executor-image, x]", 1)
	if _, err := buildOverArgo(t, "wf", other, "executor"); err == nil || !strings.Contains(err.Error(), "test") {
		t.Errorf("build error = %v, want the JSON patch's test to fail", err)
	}
}

// TestArgoInstall: manifests/argo/install is Argo's namespace-install
// v3.3.8 with the five components, in namespace argo.
func TestArgoInstall(t *testing.T) {
	data, err := os.ReadFile("argo/install/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace  string   `json:"namespace"`
		Resources  []string `json:"resources"`
		Components []string `json:"components"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	if k.Namespace != "argo" || len(k.Resources) != 1 || !strings.Contains(k.Resources[0], "argo-workflows/manifests/namespace-install?ref=v3.3.8") ||
		!slices.Equal(k.Components, []string{"../executor", "../k8sapi", "../kubelet", "../emissary", "../agent"}) {
		t.Errorf("argo/install = %+v", k)
	}
}

// TestArgoComponentsOverArgosOwnInstall builds the components over Argo
// v3.3.8's real namespace-install from the Go module cache, where the
// testbed (hack/lib/build.sh argo) downloads it; skipped without it.
func TestArgoComponentsOverArgosOwnInstall(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	install := filepath.Join(strings.TrimSpace(string(out)), "github.com/argoproj/argo-workflows/v3@v3.3.8/manifests/namespace-install")
	if _, err := os.Stat(install); err != nil {
		t.Skipf("Argo v3.3.8's module is not in the module cache (hack/lib/build.sh argo downloads it): %v", err)
	}
	dir := t.TempDir()
	rel := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, abs)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	kust := "namespace: argo\nresources: [" + rel(install) + "]\ncomponents: [" + rel("argo/executor") + ", " + rel("argo/k8sapi") + ", " + rel("argo/kubelet") + ", " + rel("argo/emissary") + ", " + rel("argo/agent") + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("build over Argo's namespace-install: %v", err)
	}
	var found int
	for _, r := range res.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		switch r.GetKind() + "/" + r.GetName() {
		case "Deployment/workflow-controller":
			var d appsv1.Deployment
			if err := workflow.DecodeStrict(data, &d); err != nil {
				t.Fatal(err)
			}
			if args := d.Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--executor-image") {
				t.Errorf("Argo's controller keeps --executor-image: %v", args)
			}
			found++
		case "ConfigMap/workflow-controller-configmap":
			var cm corev1.ConfigMap
			if err := workflow.DecodeStrict(data, &cm); err != nil {
				t.Fatal(err)
			}
			if _, err := config.FromConfigMap(&cm, backends.All().Config()); err != nil || !strings.Contains(cm.Data["executor"], "-argo") {
				t.Errorf("ConfigMap: executor %q, load error %v", cm.Data["executor"], err)
			}
			found++
		case "Role/argoexec-executor-emissary", "RoleBinding/argoexec-executor-emissary", "Role/argoexec-agent", "RoleBinding/argoexec-agent":
			found++
		}
	}
	if found != 6 {
		t.Errorf("found %d of Argo's Deployment and ConfigMap and the emissary and agent Roles and RoleBindings", found)
	}
}
