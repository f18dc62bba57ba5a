package podexec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// containerNames lists the spec's init containers (native sidecars among
// them), then its containers.
func containerNames(pod *corev1.Pod) []string {
	names := make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// containerStatus returns the status of the named container, init or not.
// A container of the spec that has no status yet (not created) has a zero
// status, which describeState calls "no status yet". ok is false only for a
// name the spec does not have.
func containerStatus(pod *corev1.Pod, name string) (st corev1.ContainerStatus, ok bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			if st.Name == name {
				return st, true
			}
		}
	}
	if slices.Contains(containerNames(pod), name) {
		return corev1.ContainerStatus{Name: name}, true
	}
	return corev1.ContainerStatus{}, false
}

// checkNames refuses names the pod does not have: waiting on them would
// never end, and signalling them cannot work.
func checkNames(pod *corev1.Pod, names []string) error {
	var missing []string
	for _, n := range names {
		if _, ok := containerStatus(pod, n); !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the pod has no container %s (it has %v)", strings.Join(missing, ", "), containerNames(pod))
	}
	return nil
}

// finishedWithout is an error when the pod has finished (Succeeded or
// Failed) while a named container has not terminated: it never will.
func finishedWithout(pod *corev1.Pod, names []string) error {
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		return nil
	}
	for _, n := range names {
		if st, _ := containerStatus(pod, n); st.State.Terminated == nil {
			return fmt.Errorf("pod is %s but container %q never terminated (%s)", pod.Status.Phase, n, describeState(st.State))
		}
	}
	return nil
}

// describeState says what state a container is in, for messages.
func describeState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.UTC().Format(time.RFC3339)
	case s.Waiting != nil && s.Waiting.Reason != "":
		return "waiting: " + s.Waiting.Reason
	case s.Waiting != nil:
		return "waiting"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated with code %d", s.Terminated.ExitCode)
	}
	return "no status yet"
}
