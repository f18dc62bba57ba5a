// Package manifests holds the install paths: the kustomize base and the
// per-backend overlays for argoexec-step (least-privilege RBAC and the
// ConfigMap StandaloneConfigMapName), and argo/, the components that make
// Argo v3.3.x's own controller run argoexec. Its tests render each one and
// decode every object strictly.
package manifests

// StandaloneConfigMapName is the ConfigMap of the overlays: not Argo's
// workflow-controller-configmap, so that applied beside Argo it cannot
// change Argo's configuration.
const StandaloneConfigMapName = "argoexec-config"
