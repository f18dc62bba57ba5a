//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// Pods and logs for the backend tests that run on the cluster's kubelet.

// testWriter writes each log line into the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("%s", strings.TrimSpace(string(b)))
	return len(b), nil
}

// testLog sends a backend's log lines to the test log; hook, if not nil, also sees them.
func testLog(t testing.TB, hook logrus.Hook) *logrus.Entry {
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(testWriter{t})
	if hook != nil {
		log.AddHook(hook)
	}
	return logrus.NewEntry(log)
}

// scriptPod is a pod of busybox containers running the scripts, with an emptyDir at /data.
func scriptPod(f *framework.Framework, name string, cs []executortest.Container) *corev1.Pod {
	pod := f.SimplePod(name, "true")
	pod.Spec.Containers = nil
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	for _, c := range cs {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name:            c.Name,
			Image:           f.Env.BusyboxImage,
			ImagePullPolicy: corev1.PullNever,
			Command:         []string{"/bin/sh", "-c", c.Script},
			VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		})
	}
	return pod
}

// startedAll is a WaitForPod condition: every container has started (running or finished).
func startedAll(p *corev1.Pod) (bool, error) {
	if len(p.Status.ContainerStatuses) < len(p.Spec.Containers) {
		return false, nil
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil && cs.State.Terminated == nil {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				return false, fmt.Errorf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
			}
			return false, nil
		}
	}
	return true, nil
}
