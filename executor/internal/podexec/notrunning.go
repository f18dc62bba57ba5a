package podexec

import "strings"

// containerNotRunning reports whether an exec error says that the
// container was not running when the exec reached it. For a container that
// the status showed running (restartPolicy Never, or a given container ID),
// that means its processes have died: Wait counts it as exited, and the exec
// transport does not retry it over another protocol.
//
// The markers are what the servers on an exec's way say when the
// container is no longer running, so the exec cannot start:
//   - the kubelet, which looks the name up among running containers only:
//     `container not found ("main")`;
//   - containerd's CRI service: `container is in CONTAINER_EXITED state`;
//   - containerd, when the process died between the two:
//     `cannot exec in a stopped state`, or, once its task is gone but the
//     container not yet marked exited, `failed to load task: no running
//     task found`;
//   - CRI-O: `container is not created or running`;
//   - the API server, once the pod has finished: `cannot exec into a
//     container in a completed pod`.
func containerNotRunning(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	for _, m := range []string{
		`container not found ("`,
		"CONTAINER_EXITED state",
		"cannot exec in a stopped state",
		"no running task found",
		"container is not created or running",
		"cannot exec into a container in a completed pod",
	} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
