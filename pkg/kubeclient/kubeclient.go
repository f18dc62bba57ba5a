// Package kubeclient is the small Kubernetes client argoexec uses: pods
// (get, watch, patch, log, exec) and the caller's identity, over one
// client-go REST client whose scheme knows only core/v1 and
// authentication/v1.
//
// client-go's typed clients (k8s.io/client-go/kubernetes, and even its
// typed/core/v1 alone) link k8s.io/client-go/kubernetes/scheme, which
// registers every built-in API group at start: 14 ms and 0.66 MiB of heap
// before main runs, for one group used (BENCHMARKS.md, issue 14). The method
// sets here are client-go's own (Pods is a subset of the typed
// PodInterface), so client-go's fake clientset satisfies them in tests.
package kubeclient

import (
	"context"
	"fmt"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Pods is what argoexec does with the pods of one namespace: the methods
// of client-go's typed PodInterface that it calls, with the same signatures.
type Pods interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// Interface is the client: pods, the core/v1 REST client (for pods/exec
// URLs), and who the API server sees.
type Interface interface {
	// Pods is the pods of namespace.
	Pods(namespace string) Pods
	// RESTClient is the core/v1 REST client.
	RESTClient() rest.Interface
	// ParameterCodec encodes core/v1 options (PodExecOptions,
	// PodLogOptions) as query parameters.
	ParameterCodec() runtime.ParameterCodec
	// WhoAmI is the user name the API server sees (a SelfSubjectReview,
	// which every authenticated user may create).
	WhoAmI(ctx context.Context) (string, error)
}

// Client is Interface over the API server. Build it with New.
type Client struct {
	core   *rest.RESTClient
	authn  *rest.RESTClient
	params runtime.ParameterCodec
}

var _ Interface = (*Client)(nil)

// newScheme knows core/v1 and authentication/v1, and the meta/v1 options
// and status of every group version.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := authnv1.AddToScheme(s); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s, nil
}

// New returns a client for cfg (which it does not change). It makes no
// request.
func New(cfg *rest.Config) (*Client, error) {
	s, err := newScheme()
	if err != nil {
		return nil, fmt.Errorf("register core/v1 and authentication/v1 types: %w", err)
	}
	codecs := serializer.NewCodecFactory(s)
	base := rest.CopyConfig(cfg)
	if base.UserAgent == "" {
		base.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	// One transport for both groups, as client-go's clientset shares one.
	httpClient, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, fmt.Errorf("create the HTTP client for %s: %w", cfg.Host, err)
	}
	rc := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(base)
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs.WithoutConversion()
		client, err := rest.RESTClientForConfigAndClient(c, httpClient)
		if err != nil {
			return nil, fmt.Errorf("create the %s client for %s: %w", gv, cfg.Host, err)
		}
		return client, nil
	}
	core, err := rc(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	authn, err := rc(authnv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &Client{core: core, authn: authn, params: runtime.NewParameterCodec(s)}, nil
}

// Pods implements Interface.
func (c *Client) Pods(namespace string) Pods { return pods{c: c, ns: namespace} }

// RESTClient implements Interface.
func (c *Client) RESTClient() rest.Interface { return c.core }

// ParameterCodec implements Interface.
func (c *Client) ParameterCodec() runtime.ParameterCodec { return c.params }

// WhoAmI implements Interface.
func (c *Client) WhoAmI(ctx context.Context) (string, error) {
	r := &authnv1.SelfSubjectReview{}
	err := c.authn.Post().Resource("selfsubjectreviews").Body(&authnv1.SelfSubjectReview{}).Do(ctx).Into(r)
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

// pods is Pods over the core/v1 REST client, built as client-go's typed
// client builds its requests (protobuf where it prefers protobuf).
type pods struct {
	c  *Client
	ns string
}

func (p pods) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := p.c.core.Get().UseProtobufAsDefault().Namespace(p.ns).Resource("pods").Name(name).
		VersionedParams(&opts, p.c.params).Do(ctx).Into(pod)
	return pod, err
}

func (p pods) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	opts.Watch = true
	return p.c.core.Get().UseProtobufAsDefault().Namespace(p.ns).Resource("pods").
		VersionedParams(&opts, p.c.params).Timeout(timeout).Watch(ctx)
}

func (p pods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := p.c.core.Patch(pt).UseProtobufAsDefault().Namespace(p.ns).Resource("pods").Name(name).SubResource(subresources...).
		VersionedParams(&opts, p.c.params).Body(data).Do(ctx).Into(pod)
	return pod, err
}

func (p pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.c.core.Get().Namespace(p.ns).Resource("pods").Name(name).SubResource("log").
		VersionedParams(opts, p.c.params)
}
