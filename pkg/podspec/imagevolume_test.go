package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestImageVolumeSupport: every node must run a kubelet with image volumes
// on by default and a runtime that mounts them; the answer names the first
// node that does not, and why.
func TestImageVolumeSupport(t *testing.T) {
	node := func(name, kubelet, runtime string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubelet, ContainerRuntimeVersion: runtime}}}
	}
	for _, tc := range []struct {
		name    string
		nodes   []corev1.Node
		want    bool
		wantWhy string
	}{
		{"containerd 2.2 on 1.37", []corev1.Node{node("a", "v1.37.2", "containerd://v2.2.9")}, true, "all 1 nodes"},
		{"cri-o 1.31 on 1.35", []corev1.Node{node("a", "v1.35.0", "cri-o://1.31.2")}, true, "all 1 nodes"},
		{"containerd 1.6", []corev1.Node{node("a", "v1.37.2", "containerd://1.6.20~ds1")}, false, "node a runs containerd://1.6.20~ds1; containerd mounts image volumes from 2.1.0"},
		{"old kubelet", []corev1.Node{node("a", "v1.37.2", "containerd://2.2.9"), node("b", "v1.34.4", "containerd://2.2.9")}, false, "node b runs kubelet v1.34.4"},
		{"docker", []corev1.Node{node("a", "v1.37.2", "docker://28.2.2")}, false, "argoexec does not know to mount image volumes"},
		{"no node", nil, false, "no node is registered"},
		{"bad version", []corev1.Node{node("a", "v1.37.2", "containerd://dev")}, false, `runtime version "containerd://dev"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := ImageVolumeSupport(tc.nodes)
			if ok != tc.want || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("ImageVolumeSupport = %v, %q; want %v, %q", ok, why, tc.want, tc.wantWhy)
			}
		})
	}
}
