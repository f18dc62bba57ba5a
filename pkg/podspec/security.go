package podspec

import (
	corev1 "k8s.io/api/core/v1"
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
// default), else RestrictedSecurityContext. A backend whose wait needs
// more (docker's opens a root-owned socket) changes wait's in its Shape.
func (b *builder) executorSecurityContext() *corev1.SecurityContext {
	if sc := b.cfg.Executor.SecurityContext; sc != nil {
		return sc.DeepCopy()
	}
	return RestrictedSecurityContext()
}
