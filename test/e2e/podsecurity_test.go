//go:build e2e

package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/executor/backends"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// TestPodSecurityAdmission submits pods built by pkg/podspec to the real API
// server in namespaces labelled pod-security.kubernetes.io/enforce: with the
// defaults, k8sapi's and kubelet's pods are admitted by restricted (their
// main sets its own restricted context, as a user's must); with
// executor.securityContext: {} (the defaults removed) restricted refuses
// them and names init and wait; the docker backend's pods are refused by
// restricted and by baseline (the socket's hostPath). Admitted pods are
// submitted as a server-side dry run (admission runs, nothing starts:
// TestWorkflow runs them for real in restricted namespaces).
func TestPodSecurityAdmission(t *testing.T) {
	restricted := framework.New(t, framework.PodSecurity("restricted"))
	baseline := framework.New(t, framework.PodSecurity("baseline"))
	for _, tc := range []struct {
		name    string
		f       *framework.Framework
		backend string
		// executorSC is the ConfigMap's executor.securityContext (nil: the defaults).
		executorSC *corev1.SecurityContext
		// refused are what the admission error must say (none: admitted).
		refused []string
	}{
		{name: "k8sapi restricted", f: restricted, backend: wf.ExecutorK8sAPI},
		{name: "kubelet restricted", f: restricted, backend: wf.ExecutorKubelet},
		{name: "k8sapi restricted without the defaults", f: restricted, backend: wf.ExecutorK8sAPI, executorSC: &corev1.SecurityContext{},
			refused: []string{`violates PodSecurity "restricted:latest"`, `containers "init", "wait" must set securityContext.allowPrivilegeEscalation=false`,
				`containers "init", "wait" must set securityContext.capabilities.drop=["ALL"]`, "runAsNonRoot=true", "seccompProfile.type"}},
		{name: "kubelet restricted without the defaults", f: restricted, backend: wf.ExecutorKubelet, executorSC: &corev1.SecurityContext{},
			refused: []string{`violates PodSecurity "restricted:latest"`, `containers "init", "wait" must set securityContext.allowPrivilegeEscalation=false`}},
		{name: "docker restricted", f: restricted, backend: wf.ExecutorDocker,
			refused: []string{`violates PodSecurity "restricted:latest"`, `restricted volume types (volume "docker-sock" uses restricted volume type "hostPath")`,
				`container "wait" must not set runAsUser=0`}},
		{name: "docker baseline", f: baseline, backend: wf.ExecutorDocker,
			refused: []string{`violates PodSecurity "baseline:latest"`, `hostPath volumes (volume "docker-sock")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.ContainerRuntimeExecutor = tc.backend
			cfg.Executor.Image = tc.f.Env.ExecutorImage
			cfg.Executor.ImagePullPolicy = corev1.PullNever
			cfg.Executor.SecurityContext = tc.executorSC
			// An input artifact, so that the pod has init as well as wait (a script-only step
			// has no init container). The pods are only admitted or refused, never run.
			tmpl := &wf.Template{Name: "psa", Script: &wf.ScriptTemplate{
				Container: corev1.Container{Image: tc.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"}, SecurityContext: mainSecurityContext()},
				Source:    "echo hi",
			}}
			tmpl.Inputs.Artifacts = []wf.Artifact{{Name: "data", Path: "/in/data", S3: &wf.S3Artifact{Key: "psa/data.tgz"}}}
			pod, err := podspec.Build(cfg, backends.All().Pods(), tmpl, podspec.Meta{PodName: "psa-" + tc.backend, Namespace: tc.f.Namespace})
			if err != nil {
				t.Fatalf("podspec.Build: %v", err)
			}
			opts := metav1.CreateOptions{}
			if len(tc.refused) == 0 {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			_, err = tc.f.Client.CoreV1().Pods(tc.f.Namespace).Create(tc.f.Context(), pod, opts)
			if len(tc.refused) == 0 {
				if err != nil {
					t.Fatalf("%s refused the pod: %v", tc.f.Namespace, err)
				}
				t.Logf("admitted by %s", tc.name)
				return
			}
			if err == nil {
				t.Fatalf("admitted; want a refusal saying %q", tc.refused)
			}
			t.Logf("refused: %v", err)
			for _, w := range tc.refused {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("admission error does not say %q", w)
				}
			}
		})
	}
}
