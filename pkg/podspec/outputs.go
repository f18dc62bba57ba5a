package podspec

import (
	"errors"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// containerMounts is a container's volume mounts.
type containerMounts = []corev1.VolumeMount

// mainMounts are the volume mounts the template gives main.
func mainMounts(t *workflow.Template) containerMounts {
	switch {
	case t.Container != nil:
		return t.Container.VolumeMounts
	case t.Script != nil:
		return t.Script.VolumeMounts
	}
	return nil
}

// mainKey names main in error messages as the template spells it.
func mainKey(t *workflow.Template) string {
	if t.Script != nil {
		return "script"
	}
	return "container"
}

// onMount reports whether p is at or under one of mounts' paths.
func onMount(p string, mounts containerMounts) bool {
	p = path.Clean(p)
	for _, m := range mounts {
		mp := path.Clean(m.MountPath)
		if p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/") {
			return true
		}
	}
	return false
}

// checkOutputsReachable refuses outputs that the backend cannot collect.
// k8sapi and kubelet read outputs by exec into main, which has exited by
// the time wait collects; wait reads a path on a volume through its
// /mainctrfs mirror instead. docker reads the stopped container's
// filesystem and can collect any path.
func checkOutputsReachable(backend string, t *workflow.Template) error {
	if backend == workflow.ExecutorDocker {
		return nil
	}
	mounts := mainMounts(t)
	var errs []error
	unreachable := func(what, name, p string) {
		if p == "" || onMount(p, mounts) {
			return
		}
		errs = append(errs, fmt.Errorf("output %s %q: path %s is not on a volume of main, and the %s executor cannot read main's own filesystem after main has exited: "+
			"put the path on a volume (emptyDir) or use the docker executor", what, name, p, backend))
	}
	for _, p := range t.Outputs.Parameters {
		if p.ValueFrom != nil {
			unreachable("parameter", p.Name, p.ValueFrom.Path)
		}
	}
	for _, a := range t.Outputs.Artifacts {
		unreachable("artifact", a.Name, a.Path)
	}
	return errors.Join(errs...)
}
