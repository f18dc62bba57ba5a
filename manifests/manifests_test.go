package manifests

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/argoexec/argoexec/executor/backends"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// objects is one rendered overlay, decoded into typed structs.
type objects struct {
	serviceAccounts     []corev1.ServiceAccount
	configMaps          []corev1.ConfigMap
	roles               []rbacv1.Role
	roleBindings        []rbacv1.RoleBinding
	clusterRoles        []rbacv1.ClusterRole
	clusterRoleBindings []rbacv1.ClusterRoleBinding
}

// render builds an overlay with kustomize and decodes every object strictly
// into its Kubernetes type; an unknown kind or field fails.
func render(t *testing.T, overlay string) *objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("overlays", overlay))
	if err != nil {
		t.Fatalf("kustomize build overlays/%s: %v", overlay, err)
	}
	objs := &objects{}
	for _, r := range res.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := objs.add(r.GetKind(), data); err != nil {
			t.Errorf("overlays/%s: %s %s: %v", overlay, r.GetKind(), r.GetName(), err)
		}
	}
	return objs
}

func (o *objects) add(kind string, data []byte) error {
	switch kind {
	case "ServiceAccount":
		return decodeInto(data, &o.serviceAccounts)
	case "ConfigMap":
		return decodeInto(data, &o.configMaps)
	case "Role":
		return decodeInto(data, &o.roles)
	case "RoleBinding":
		return decodeInto(data, &o.roleBindings)
	case "ClusterRole":
		return decodeInto(data, &o.clusterRoles)
	case "ClusterRoleBinding":
		return decodeInto(data, &o.clusterRoleBindings)
	}
	return fmt.Errorf("unexpected kind %q", kind)
}

func decodeInto[T any](data []byte, list *[]T) error {
	var v T
	if err := workflow.DecodeStrict(data, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

// grants lists what rules grant as sorted resource:verb pairs.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				out = append(out, res+":"+v)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestOverlays(t *testing.T) {
	for _, tc := range []struct {
		overlay    string
		roleGrants []string
		nodesProxy bool
	}{
		{overlay: "k8sapi", roleGrants: []string{"pods/exec:create", "pods/log:get", "pods:get", "pods:patch", "pods:watch"}},
		{overlay: "kubelet", roleGrants: []string{"pods:get", "pods:patch"}, nodesProxy: true},
		{overlay: "docker", roleGrants: []string{"pods:get", "pods:patch"}},
	} {
		t.Run(tc.overlay, func(t *testing.T) {
			o := render(t, tc.overlay)
			if len(o.serviceAccounts) != 1 || o.serviceAccounts[0].Name != "argoexec" {
				t.Fatalf("service accounts = %+v", o.serviceAccounts)
			}
			ns := o.serviceAccounts[0].Namespace
			if len(o.roles) != 1 || !slices.Equal(grants(o.roles[0].Rules), tc.roleGrants) {
				t.Errorf("Role grants %v, want %v", grants(o.roles[0].Rules), tc.roleGrants)
			}
			if len(o.roleBindings) != 1 || o.roleBindings[0].RoleRef.Name != o.roles[0].Name ||
				o.roleBindings[0].Subjects[0].Name != "argoexec" {
				t.Errorf("RoleBinding = %+v", o.roleBindings)
			}
			checkNodesProxy(t, o, tc.nodesProxy, ns)
			checkConfigMap(t, o, tc.overlay)
		})
	}
}

func checkNodesProxy(t *testing.T, o *objects, want bool, ns string) {
	t.Helper()
	if !want {
		if len(o.clusterRoles)+len(o.clusterRoleBindings) > 0 {
			t.Errorf("overlay grants cluster-wide roles: %+v", o.clusterRoles)
		}
		return
	}
	if len(o.clusterRoles) != 1 || !slices.Equal(grants(o.clusterRoles[0].Rules), []string{"nodes/pods:get", "nodes/proxy:create", "nodes/proxy:get"}) {
		t.Fatalf("ClusterRoles = %+v, want one granting nodes/pods get and nodes/proxy get and create", o.clusterRoles)
	}
	if len(o.clusterRoleBindings) != 1 {
		t.Fatalf("ClusterRoleBindings = %+v", o.clusterRoleBindings)
	}
	b := o.clusterRoleBindings[0]
	if b.RoleRef.Name != o.clusterRoles[0].Name || len(b.Subjects) != 1 || b.Subjects[0].Name != "argoexec" || b.Subjects[0].Namespace != ns {
		t.Errorf("ClusterRoleBinding = %+v, want it to bind %s/argoexec", b, ns)
	}
}

// checkConfigMap checks that the overlay's ConfigMap passes the
// controller's own strict validation and selects the overlay's backend.
func checkConfigMap(t *testing.T, o *objects, backend string) {
	t.Helper()
	// Not Argo's workflow-controller-configmap, nor its legacy key: applied
	// beside Argo, the overlay must leave Argo's configuration alone.
	if len(o.configMaps) != 1 || o.configMaps[0].Name != StandaloneConfigMapName || o.configMaps[0].Name == config.ConfigMapName {
		t.Fatalf("ConfigMaps = %+v, want one named %s", o.configMaps, StandaloneConfigMapName)
	}
	if _, ok := o.configMaps[0].Data[config.ConfigKey]; ok {
		t.Errorf("ConfigMap uses the legacy key %s; want Argo's per-key layout", config.ConfigKey)
	}
	cfg, err := config.FromConfigMap(&o.configMaps[0], backends.All().Config())
	if err != nil {
		t.Fatalf("ConfigMap: %v", err)
	}
	if got, _ := cfg.Select(nil, backends.All().Config()); got != backend {
		t.Errorf("ConfigMap selects %q, want %q", got, backend)
	}
	if o.configMaps[0].Data["containerRuntimeExecutor"] != backend {
		t.Errorf("ConfigMap does not set containerRuntimeExecutor: %s explicitly", backend)
	}
}
