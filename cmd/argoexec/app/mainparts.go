//go:build argoexec_main

package app

import (
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor/protocol"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// mainParts is what the main-container commands (data, resource) start
// from: the template, wait's credentials, and what the protocol decides.
func (o *mainOptions) mainParts() (*wf.Template, *rest.Config, protocol.MainParts, error) {
	tmpl, err := o.Protocol.Template(o.TemplatePath)
	if err != nil {
		return nil, nil, protocol.MainParts{}, err
	}
	restCfg, err := restConfig(o.Backend.Kubeconfig)
	if err != nil {
		return nil, nil, protocol.MainParts{}, err
	}
	parts, err := o.Protocol.Main(o.request(tmpl, restCfg, o.Log))
	return tmpl, restCfg, parts, err
}
