package report

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RBACHint returns, for an API server refusal (403), what to grant: verb on
// resource in namespace, to the pod's service account; "" for other errors.
// Append it to the error message of the request that was refused.
func RBACHint(err error, verb, resource, namespace string) string {
	if !apierrors.IsForbidden(err) {
		return ""
	}
	return fmt.Sprintf("; missing permission: the pod's service account needs RBAC verb %q on resource %q in namespace %s (grant it in the Role bound to it, as manifests/base/role.yaml does)",
		verb, resource, namespace)
}
