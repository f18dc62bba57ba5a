// This file carries no e2e build tag: hack/tools/dockernode (make demo) uses it too.

package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DockerNodeName is the Node that pods run on the real dockerd (with cri-dockerd's labels) are
// bound to. No kubelet runs it: the pod object exists only as the target of wait's outputs
// annotation.
const DockerNodeName = "docker-node"

// RegisterDockerNode creates the Node object DockerNodeName unless it exists. Without it, the
// controller-manager's pod GC deletes pods bound to a node it cannot find (after a 40 s
// quarantine counted from the first pod it saw there, so a later pod may go within seconds).
// The node is cordoned and tainted so the scheduler never places a real pod on it; pods bound
// to it carry DockerNodeTolerations so the unreachable taint that the node lifecycle controller
// adds (no kubelet heartbeats) never evicts them.
func RegisterDockerNode(ctx context.Context, client kubernetes.Interface) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   DockerNodeName,
			Labels: map[string]string{"argoexec.io/testbed": "docker-node"},
		},
		Spec: corev1.NodeSpec{
			Unschedulable: true,
			Taints: []corev1.Taint{{
				Key:    "argoexec.io/docker-node",
				Value:  "no-kubelet",
				Effect: corev1.TaintEffectNoSchedule,
			}},
		},
	}
	_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register Node %s for the Docker-runtime pods (needs create on nodes): %w", DockerNodeName, err)
	}
	return nil
}

// DockerNodeTolerations tolerates every taint, so pods bound to DockerNodeName stay while
// wait runs on dockerd.
func DockerNodeTolerations() []corev1.Toleration {
	return []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
}
