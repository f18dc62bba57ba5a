package podspec

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// RestrictedSecurityContext is the security context init and wait get when
// the ConfigMap's executor.securityContext is unset: what Pod Security
// "restricted" asks of a container, plus a read-only root filesystem (init
// and wait write only to their emptyDirs: /tmp, /var/run/argo). It is set
// on the two containers, not on the pod, so main and the sidecars keep the
// security context the template gives them. The user is the image's
// (8737 in argoexec's image), so a template's pod-level runAsUser still
// applies to init and wait as Kubernetes defines it.
func RestrictedSecurityContext() *corev1.SecurityContext {
	yes, no := true, false
	return &corev1.SecurityContext{
		RunAsNonRoot:             &yes,
		AllowPrivilegeEscalation: &no,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// executorSecurityContext is the security context of init or wait: the
// ConfigMap's executor.securityContext as it is when set (`{}` drops every
// default), else RestrictedSecurityContext. The docker backend's wait runs
// as root unless the ConfigMap says otherwise: it opens the node's Docker
// socket, which is root's (root:docker, 0660).
func (b *builder) executorSecurityContext(container string) *corev1.SecurityContext {
	if sc := b.cfg.Executor.SecurityContext; sc != nil {
		sc = sc.DeepCopy()
		if b.dockerWait(container) && sc.RunAsUser == nil && !isTrue(sc.RunAsNonRoot) {
			sc.RunAsUser = new(int64)
		}
		return sc
	}
	sc := RestrictedSecurityContext()
	if b.dockerWait(container) {
		sc.RunAsNonRoot = nil
		sc.RunAsUser = new(int64)
	}
	return sc
}

func (b *builder) dockerWait(container string) bool {
	return b.backend == workflow.ExecutorDocker && container == workflow.WaitContainerName
}

// checkExecutorSecurity refuses an executor.securityContext that cannot
// work with the selected backend. The rule: with the docker backend,
// runAsNonRoot: true needs runAsGroup, the group that owns the node's
// Docker socket; without it wait could not open the socket.
func checkExecutorSecurity(cfg *config.Config, backend string) error {
	sc := cfg.Executor.SecurityContext
	if backend != workflow.ExecutorDocker || sc == nil || !isTrue(sc.RunAsNonRoot) || sc.RunAsGroup != nil {
		return nil
	}
	return fmt.Errorf("executor.securityContext.runAsNonRoot: true does not work with the docker backend: "+
		"wait opens the node's Docker socket %s, which belongs to root (and group docker, mode 0660); "+
		"set executor.securityContext.runAsGroup to the socket's group ID on the nodes, or drop runAsNonRoot to run wait as root. "+
		"A docker-backend pod cannot pass Pod Security restricted or baseline anyway (it mounts the socket from the host): "+
		"use the k8sapi or kubelet backend for that", cfg.DockerSockPath)
}

func isTrue(p *bool) bool { return p != nil && *p }
