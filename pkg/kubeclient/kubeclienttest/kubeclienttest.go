// Package kubeclienttest adapts client-go's clientset (its fake, in tests)
// to kubeclient.Interface. Only tests import it: it links the full clientset.
package kubeclienttest

import (
	"context"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/pkg/kubeclient"
)

// FromClientset is c as a kubeclient.Interface.
func FromClientset(c kubernetes.Interface) kubeclient.Interface { return clientset{c} }

type clientset struct{ c kubernetes.Interface }

func (c clientset) Pods(namespace string) kubeclient.Pods { return c.c.CoreV1().Pods(namespace) }

func (c clientset) RESTClient() rest.Interface { return c.c.CoreV1().RESTClient() }

func (c clientset) ParameterCodec() runtime.ParameterCodec { return scheme.ParameterCodec }

func (c clientset) WhoAmI(ctx context.Context) (string, error) {
	r, err := c.c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}
