package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// The oldest versions that mount image volumes (KEP-4639): the kubelet
// where the ImageVolume feature gate is on by default (beta in 1.35, GA and
// locked on in 1.36), and the runtimes that implement the CRI's image
// mounts.
var (
	imageVolumeKubelet = version.MustParseGeneric("1.35.0")
	imageVolumeRuntime = map[string]*version.Version{
		"containerd": version.MustParseGeneric("2.1.0"),
		"cri-o":      version.MustParseGeneric("1.31.0"),
	}
)

// ImageVolumeSupport says whether every one of nodes can mount an image
// volume, from what each reports of its kubelet and container runtime
// (status.nodeInfo), so that emissaryImageVolume: auto can mount the
// executor image instead of copying the wrapper from init. why names the
// first node that cannot and what it lacks, or, when all can, what was
// checked. No node is a no: a pod could land on a node not seen yet.
func ImageVolumeSupport(nodes []corev1.Node) (ok bool, why string) {
	if len(nodes) == 0 {
		return false, "no node is registered"
	}
	for _, n := range nodes {
		info := n.Status.NodeInfo
		kv, err := version.ParseGeneric(info.KubeletVersion)
		if err != nil {
			return false, fmt.Sprintf("node %s: kubelet version %q: %v", n.Name, info.KubeletVersion, err)
		}
		if kv.LessThan(imageVolumeKubelet) {
			return false, fmt.Sprintf("node %s runs kubelet %s; image volumes are on by default from %s", n.Name, info.KubeletVersion, imageVolumeKubelet)
		}
		runtime, rv, _ := strings.Cut(info.ContainerRuntimeVersion, "://")
		least, known := imageVolumeRuntime[runtime]
		if !known {
			return false, fmt.Sprintf("node %s runs %s, which argoexec does not know to mount image volumes (containerd >= %s and CRI-O >= %s do)",
				n.Name, info.ContainerRuntimeVersion, imageVolumeRuntime["containerd"], imageVolumeRuntime["cri-o"])
		}
		v, err := version.ParseGeneric(rv)
		if err != nil {
			return false, fmt.Sprintf("node %s: runtime version %q: %v", n.Name, info.ContainerRuntimeVersion, err)
		}
		if v.LessThan(least) {
			return false, fmt.Sprintf("node %s runs %s; %s mounts image volumes from %s", n.Name, info.ContainerRuntimeVersion, runtime, least)
		}
	}
	return true, fmt.Sprintf("all %d nodes run kubelet >= %s and a runtime that mounts image volumes", len(nodes), imageVolumeKubelet)
}
