package podspec

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
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
// An exec-based backend (k8sapi, kubelet) would exec into main, which has
// exited by the time wait collects; wait reads a path on a volume through
// its /mainctrfs mirror instead. A backend that ReadsExitedMain (docker
// reads the stopped container's filesystem) can collect any path; the
// error names those among backends.
func checkOutputsReachable(backend Backend, backends []Backend, t *workflow.Template) error {
	if backend.ReadsExitedMain() {
		return nil
	}
	fix := "put the path on a volume (emptyDir)"
	var readers []string
	for _, b := range backends {
		if b.ReadsExitedMain() {
			readers = append(readers, b.Name())
		}
	}
	if len(readers) > 0 {
		slices.Sort(readers)
		fix += " or use the " + config.OneOf(readers) + " executor"
	}
	mounts := mainMounts(t)
	var errs []error
	unreachable := func(what, name, p string) {
		if p == "" || onMount(p, mounts) {
			return
		}
		errs = append(errs, fmt.Errorf("output %s %q: path %s is not on a volume of main, and the %s executor cannot read main's own filesystem after main has exited: %s",
			what, name, p, backend.Name(), fix))
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
