//go:build e2e

package e2e

import (
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/executor/emissary"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// secondNodeTaint is the taint hack/lib/node2.sh registers the second node with: a pod runs
// there only when it tolerates it.
const secondNodeTaint = "argoexec.io/second-node"

// testbedNode is one Node of the testbed and the address its kubelet serves on.
type testbedNode struct {
	Name, IP string
	Tainted  bool
}

// testbedNodes lists the testbed's Ready, schedulable Nodes, the first node (untainted) first. With
// ARGOEXEC_NODES=1 (hack/cluster.sh left the second node out) a test that needs two skips;
// otherwise a missing second node is a failure: hack/cluster.sh up starts it.
func testbedNodes(t *testing.T, f *framework.Framework) []testbedNode {
	t.Helper()
	list, err := f.Client.CoreV1().Nodes().List(f.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	var nodes []testbedNode
	for _, n := range list.Items {
		// only nodes with a kubelet that runs pods: the argo tier's docker-node
		// (framework/dockernode.go) is a cordoned Node object with none
		ready := slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		if !ready || n.Spec.Unschedulable {
			continue
		}
		tn := testbedNode{Name: n.Name}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				tn.IP = a.Address
			}
		}
		tn.Tainted = slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == secondNodeTaint })
		nodes = append(nodes, tn)
	}
	slices.SortFunc(nodes, func(a, b testbedNode) int {
		if a.Tainted != b.Tainted {
			return map[bool]int{false: -1, true: 1}[a.Tainted]
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(nodes) < 2 {
		if os.Getenv("ARGOEXEC_NODES") == "1" {
			t.Skipf("one node (ARGOEXEC_NODES=1): %+v", nodes)
		}
		t.Fatalf("the testbed has %d node(s) %+v; hack/cluster.sh up starts the second (hack/lib/node2.sh)", len(nodes), nodes)
	}
	return nodes
}

// TestTwoNodes pins one step to each node of the testbed, on every backend that runs pods on
// the kubelet, and checks that the step ran there and its outputs came back: the script's
// result, an output parameter read from main, and an output artifact in S3 (the second node's
// pods reach the host through its network namespace). The kubelet backend must have talked to
// the kubelet of the pod's own node (status.hostIP, that node's serving certificate): wait's
// log names the kubelet it used on every line, and never the other node's.
func TestTwoNodes(t *testing.T) {
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet, emissary.ExecutorEmissary} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newWfEnv(t, backend)
			nodes := testbedNodes(t, e.f)
			for i, node := range nodes {
				t.Run("node"+strconv.Itoa(i+1), func(t *testing.T) {
					t.Parallel()
					e.testOnNode(t, node, nodes)
				})
			}
		})
	}
}

func (e *wfEnv) testOnNode(t *testing.T, node testbedNode, all []testbedNode) {
	tmpl := &wf.Template{Name: "pinned", Script: &wf.ScriptTemplate{
		Container: corev1.Container{Image: e.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"}, SecurityContext: mainSecurityContext()},
		Source:    "echo on \"$NODE\" > /tmp/where; echo result from \"$NODE\"",
	}}
	tmpl.Script.Env = []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	tmpl.NodeSelector = map[string]string{corev1.LabelHostname: node.Name}
	tmpl.Tolerations = []corev1.Toleration{{Key: secondNodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "where", ValueFrom: &wf.ValueFrom{Path: "/tmp/where"}}}
	tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "where", Path: "/tmp/where"}}
	if e.backend != emissary.ExecutorEmissary {
		// k8sapi and kubelet read main's files while it runs: the files live on a volume
		// (an emptyDir) that wait sees, as on every other test of theirs
		vols, mounts := workVolume()
		tmpl.Volumes, tmpl.Script.VolumeMounts = vols, mounts
		tmpl.Script.Source = strings.ReplaceAll(tmpl.Script.Source, "/tmp/where", "/work/where")
		tmpl.Outputs.Parameters[0].ValueFrom.Path = "/work/where"
		tmpl.Outputs.Artifacts[0].Path = "/work/where"
	}
	r := e.run(t, "pinned-"+strings.ReplaceAll(node.Name, ".", "-"), tmpl, nil, false)
	if r.pod.Spec.NodeName != node.Name || r.pod.Status.HostIP != node.IP {
		t.Fatalf("pod ran on node %q (host IP %s), want %s (%s)", r.pod.Spec.NodeName, r.pod.Status.HostIP, node.Name, node.IP)
	}
	if r.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s on node %s", r.pod.Status.Phase, node.Name)
	}
	if got, want := r.param(t, "where"), "on "+node.Name; got != want {
		t.Errorf("output parameter where = %q, want %q", got, want)
	}
	if r.outputs.Result == nil || *r.outputs.Result != "result from "+node.Name {
		t.Errorf("result = %v, want %q", r.outputs.Result, "result from "+node.Name)
	}
	if len(r.outputs.Artifacts) != 1 || r.outputs.Artifacts[0].S3 == nil {
		t.Fatalf("artifacts = %+v, want one in S3", r.outputs.Artifacts)
	}
	t.Logf("node %s (%s): phase %s, artifact at s3 key %s", node.Name, node.IP, r.pod.Status.Phase, r.outputs.Artifacts[0].S3.Key)
	if e.backend != wf.ExecutorKubelet {
		return
	}
	for _, other := range all {
		addr := net.JoinHostPort(other.IP, "10250")
		used := strings.Contains(r.waitLog, addr)
		if other.Name == node.Name && !used {
			t.Errorf("wait's log never names this node's kubelet %s:\n%s", addr, r.waitLog)
		}
		if other.Name != node.Name && used {
			t.Errorf("wait on node %s talked to node %s's kubelet %s:\n%s", node.Name, other.Name, addr, r.waitLog)
		}
	}
}
