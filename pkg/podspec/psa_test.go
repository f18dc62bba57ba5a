package podspec_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// executorOnly is pod with only the containers argoexec owns (init and
// wait) and the pod's volumes: main and the sidecars are the user's, and
// so is the pod-level security context.
func executorOnly(pod *corev1.Pod) *corev1.PodSpec {
	spec := pod.Spec.DeepCopy()
	ours := func(c corev1.Container) bool {
		return c.Name != workflow.InitContainerName && c.Name != workflow.WaitContainerName
	}
	spec.InitContainers = slices.DeleteFunc(spec.InitContainers, ours)
	spec.Containers = slices.DeleteFunc(spec.Containers, ours)
	spec.SecurityContext = nil
	return spec
}

// evaluate runs the Pod Security Admission checks of the API server
// (k8s.io/pod-security-admission, the same code) at level, latest version.
func evaluate(t *testing.T, level psaapi.Level, pod *corev1.Pod, spec *corev1.PodSpec) policy.AggregateCheckResult {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return policy.AggregateCheckResults(ev.EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, spec))
}

// TestPodSecurityRestricted evaluates init and wait, as podspec.Build makes them,
// against Pod Security "restricted" (and "baseline" for what restricted
// refuses): k8sapi, kubelet and emissary pass by default; the docker backend cannot
// (root for the socket, a hostPath), nor a kubelet CA from a hostPath, nor
// an executor.securityContext that drops the defaults.
func TestPodSecurityRestricted(t *testing.T) {
	for _, tc := range []struct {
		name, config, template string
		// refused are the restricted reasons expected (none: admitted).
		refused []string
		// baseline says whether baseline admits the executor containers.
		baseline bool
	}{
		{name: "k8sapi container", template: "container.yaml", baseline: true},
		{name: "k8sapi script", template: "script.yaml", baseline: true},
		{name: "k8sapi artifacts", config: s3Config, template: "artifacts.yaml", baseline: true},
		{name: "kubelet", config: "containerRuntimeExecutor: kubelet\n", template: "script.yaml", baseline: true},
		{name: "kubelet insecure", config: "containerRuntimeExecutor: kubelet\nkubeletInsecure: true\n", template: "script.yaml", baseline: true},
		{name: "kubelet CA in the service-account directory", config: "containerRuntimeExecutor: kubelet\nkubeletCAFile: " + workflow.ServiceAccountCAPath + "\n",
			template: "script.yaml", baseline: true},
		{name: "kubelet CA from a hostPath", config: "containerRuntimeExecutor: kubelet\nkubeletCAFile: /var/lib/kubelet/pki/ca.crt\n",
			template: "script.yaml", refused: []string{"restricted volume types"}},
		{name: "emissary container", config: "containerRuntimeExecutor: emissary\n", template: "emissary.yaml", baseline: true},
		{name: "emissary script", config: "containerRuntimeExecutor: emissary\n", template: "script.yaml", baseline: true},
		{name: "emissary artifacts", config: "containerRuntimeExecutor: emissary\n" + s3Config, template: "artifacts.yaml", baseline: true},
		{name: "emissary without the defaults", config: "containerRuntimeExecutor: emissary\nexecutor: {securityContext: {}}\n", template: "emissary.yaml", baseline: true,
			refused: []string{"allowPrivilegeEscalation != false", "unrestricted capabilities", "runAsNonRoot != true", "seccompProfile"}},
		{name: "docker", config: "containerRuntimeExecutor: docker\n", template: "script.yaml",
			refused: []string{"restricted volume types", "runAsNonRoot != true", "runAsUser=0"}},
		{name: "k8sapi without the defaults", config: "executor: {securityContext: {}}\n", template: "script.yaml", baseline: true,
			refused: []string{"allowPrivilegeEscalation != false", "unrestricted capabilities", "runAsNonRoot != true", "seccompProfile"}},
		{name: "kubelet with the ConfigMap's own restricted context", template: "script.yaml", baseline: true,
			config: "containerRuntimeExecutor: kubelet\nexecutor:\n  securityContext: {runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false, " +
				"capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := mustBuild(t, tc.config, tc.template, meta())
			spec := executorOnly(pod)
			got := evaluate(t, psaapi.LevelRestricted, pod, spec)
			if got.Allowed != (len(tc.refused) == 0) {
				t.Fatalf("restricted: allowed=%v, want %v; reasons %q, details %q", got.Allowed, len(tc.refused) == 0, got.ForbiddenReasons, got.ForbiddenDetails)
			}
			if diff := cmp.Diff(tc.refused, got.ForbiddenReasons); len(tc.refused) > 0 && diff != "" {
				t.Errorf("restricted reasons (-want +got):\n%s\ndetails: %q", diff, got.ForbiddenDetails)
			}
			if b := evaluate(t, psaapi.LevelBaseline, pod, spec); b.Allowed != tc.baseline {
				t.Errorf("baseline: allowed=%v, want %v (%s)", b.Allowed, tc.baseline, b.ForbiddenReason())
			}
		})
	}
}

// TestPodSecurityWholePod: a template whose main sets a restricted
// security context gets a pod that restricted admits as a whole, wrapped
// by emissary or not; the defaults are on init and wait only, so a main
// without one is refused by name and init and wait are not.
func TestPodSecurityWholePod(t *testing.T) {
	for backend, cfg := range map[string]string{"k8sapi": "", "emissary": "containerRuntimeExecutor: emissary\n"} {
		t.Run(backend, func(t *testing.T) {
			tmpl := mustTemplate(t, "script.yaml")
			pod, err := podspec.Build(mustConfig(t, cfg), registered(), tmpl, meta())
			if err != nil {
				t.Fatal(err)
			}
			got := evaluate(t, psaapi.LevelRestricted, pod, &pod.Spec)
			if got.Allowed {
				t.Fatal("restricted admitted a main without a security context")
			}
			for _, d := range got.ForbiddenDetails {
				if !strings.Contains(d, `container "main"`) || strings.Contains(d, `"wait"`) || strings.Contains(d, `"init"`) {
					t.Errorf("detail %q: want only main named", d)
				}
			}
			uid := int64(1000)
			tmpl.Script.SecurityContext = podspec.RestrictedSecurityContext()
			tmpl.Script.SecurityContext.RunAsUser = &uid
			if pod, err = podspec.Build(mustConfig(t, cfg), registered(), tmpl, meta()); err != nil {
				t.Fatal(err)
			}
			if got := evaluate(t, psaapi.LevelRestricted, pod, &pod.Spec); !got.Allowed {
				t.Errorf("restricted refused the pod with a restricted main: %s: %q", got.ForbiddenReason(), got.ForbiddenDetails)
			}
			if pod.Spec.SecurityContext != nil {
				t.Errorf("pod securityContext %+v: the defaults belong on init and wait, not the pod (main is the user's)", pod.Spec.SecurityContext)
			}
		})
	}
}

// TestExecutorSecurityContext: which security context init and wait get
// per backend and ConfigMap, and the docker backend's refusal.
func TestExecutorSecurityContext(t *testing.T) {
	root, uid, gid := int64(0), int64(1000), int64(999)
	yes := true
	restricted := podspec.RestrictedSecurityContext()
	dockerWait := podspec.RestrictedSecurityContext()
	dockerWait.RunAsNonRoot, dockerWait.RunAsUser = nil, &root
	for _, tc := range []struct {
		name, config     string
		init, wait       *corev1.SecurityContext
		wantErrSubstring string
	}{
		{name: "k8sapi default", init: restricted, wait: restricted},
		{name: "kubelet default", config: "containerRuntimeExecutor: kubelet\n", init: restricted, wait: restricted},
		{name: "docker default", config: "containerRuntimeExecutor: docker\n", init: restricted, wait: dockerWait},
		{name: "emissary default", config: "containerRuntimeExecutor: emissary\n", init: restricted, wait: restricted},
		{name: "override replaces the defaults", config: "executor: {securityContext: {runAsUser: 1000}}\n",
			init: &corev1.SecurityContext{RunAsUser: &uid}, wait: &corev1.SecurityContext{RunAsUser: &uid}},
		{name: "empty override drops them", config: "executor: {securityContext: {}}\n", init: &corev1.SecurityContext{}, wait: &corev1.SecurityContext{}},
		{name: "docker override without a user runs wait as root", config: "containerRuntimeExecutor: docker\nexecutor: {securityContext: {}}\n",
			init: &corev1.SecurityContext{}, wait: &corev1.SecurityContext{RunAsUser: &root}},
		{name: "docker non-root with the socket's group", config: "containerRuntimeExecutor: docker\nexecutor: {securityContext: {runAsNonRoot: true, runAsGroup: 999}}\n",
			init: &corev1.SecurityContext{RunAsNonRoot: &yes, RunAsGroup: &gid}, wait: &corev1.SecurityContext{RunAsNonRoot: &yes, RunAsGroup: &gid}},
		{name: "docker non-root without a group", config: "containerRuntimeExecutor: docker\ndockerSockPath: /run/docker.sock\nexecutor: {securityContext: {runAsNonRoot: true}}\n",
			wantErrSubstring: "executor.securityContext.runAsNonRoot: true does not work with the docker backend: wait opens the node's Docker socket /run/docker.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, err := podspec.Build(mustConfig(t, tc.config), registered(), mustTemplate(t, "artifacts.yaml"), meta()) // input artifacts: init is there too
			if tc.wantErrSubstring != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstring) || !strings.Contains(err.Error(), "runAsGroup") {
					t.Fatalf("podspec.Build error = %v, want it to contain %q and say runAsGroup", err, tc.wantErrSubstring)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.init, container(pod, workflow.InitContainerName).SecurityContext); diff != "" {
				t.Errorf("init (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wait, container(pod, workflow.WaitContainerName).SecurityContext); diff != "" {
				t.Errorf("wait (-want +got):\n%s", diff)
			}
		})
	}
}
