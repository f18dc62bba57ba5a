package resource

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// NewRESTMapper maps kinds and kubectl's resource names (singular, plural
// and short names such as cm or wf) to the cluster's resources through API
// discovery: read once, on first use, and read again when a kind is not
// found (a CRD installed by an earlier step). warn receives discovery's
// warnings.
func NewRESTMapper(client discovery.DiscoveryInterface, warn func(string)) meta.RESTMapper {
	cached := memory.NewMemCacheClient(client)
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, warn)
}
