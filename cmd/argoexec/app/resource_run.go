//go:build argoexec_main

package app

import (
	"context"
	"fmt"
	"time"

	"github.com/argoexec/argoexec/executor/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// resourceRunner is, in argoexec-main, the resource template's own flow.
func resourceRunner() func(context.Context, *ResourceOptions) error { return runResource }

// runResource is what `argoexec resource` does once its options are valid.
func runResource(ctx context.Context, o *ResourceOptions) error {
	tmpl, restCfg, parts, err := o.mainParts()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("create Kubernetes client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("create Kubernetes discovery client: %w", err)
	}
	log := o.Log.WithField("action", o.Action)
	e := &resource.Executor{
		Config: resource.Config{
			Action: o.Action, Template: tmpl, PodName: o.Pod.Name, PodNamespace: o.Pod.Namespace,
			Deadline: parts.Deadline, PollInterval: pollInterval(o.PollInterval),
		},
		Client:   dyn,
		Mapper:   resource.NewRESTMapper(disco, func(w string) { log.Warn(w) }),
		Reporter: parts.Reporter,
		Log:      log,
	}
	if err := e.Run(ctx); err != nil {
		return fmt.Errorf("resource template %q: %w", tmpl.Name, err)
	}
	return nil
}

// pollInterval is d, or resource.DefaultPollInterval when d is zero.
func pollInterval(d time.Duration) time.Duration {
	if d == 0 {
		return resource.DefaultPollInterval
	}
	return d
}
