// Package manifests holds the kustomize base and the per-backend overlays
// (least-privilege RBAC and the controller ConfigMap); its test renders every
// overlay and decodes each object strictly.
package manifests
