// Command dockernode plays a Docker node (what kubelet + cri-dockerd would do)
// for one rendered pod, for the demo: the cluster's kubelet runs pods on
// containerd, so the docker backend could not find any pod's containers.
//
// It creates the Pod in the API server bound to the Node "docker-node", which it
// registers and no kubelet runs (wait patches its outputs onto the pod), materialises the
// pod's volumes under a temp dir, runs the containers on dockerd through the
// Engine API with cri-dockerd's labels, in the kubelet's order, and prints the
// phase, the outputs wait reported and the timings.
//
//	dockernode -pod pod.yaml -kubeconfig K [-timeout 3m]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/cmd/argoexec-step/app"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

const saMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

type options struct {
	podFile, kubeconfig, sock, node, hostIP, apiPort, caFile string
	timeout                                                  time.Duration
}

// node is one pod's run: its API object, its host dir and its containers.
type node struct {
	opt    options
	client kubernetes.Interface
	docker *framework.Docker
	pod    *corev1.Pod
	dir    string
	vols   map[string]string // volume name -> host path
	ids    map[string]string // container name -> docker id
	order  []string          // container names in creation order, for cleanup
}

func main() {
	var o options
	flag.StringVar(&o.podFile, "pod", "", "rendered pod YAML (argoexec-step render)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&o.sock, "sock", "/var/run/docker.sock", "dockerd socket")
	flag.StringVar(&o.node, "node", framework.DockerNodeName, "spec.nodeName of the API pod (a Node object no kubelet runs; registered if absent)")
	flag.StringVar(&o.hostIP, "host-ip", "10.88.0.1", "status.hostIP, and the API server address for in-cluster config")
	flag.StringVar(&o.apiPort, "api-port", "6443", "API server port for in-cluster config")
	flag.StringVar(&o.caFile, "ca", "/var/lib/argoexec-testbed/pki/ca.crt", "cluster CA, written as the service account's ca.crt")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "give up after this long")
	flag.Parse()
	if o.podFile == "" {
		fmt.Fprintln(os.Stderr, "dockernode: -pod is required")
		os.Exit(2)
	}
	ok, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dockernode:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(o options) (bool, error) {
	data, err := os.ReadFile(o.podFile)
	if err != nil {
		return false, err
	}
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		return false, fmt.Errorf("parse pod %s: %w", o.podFile, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return false, fmt.Errorf("kubeconfig %q: %w", o.kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	n := &node{opt: o, client: client, docker: framework.NewDocker(o.sock), vols: map[string]string{}, ids: map[string]string{}}
	if err := n.docker.Ping(ctx); err != nil {
		return false, err
	}
	defer n.cleanup()
	if err := n.createPod(ctx, pod); err != nil {
		return false, err
	}
	if err := n.setupVolumes(ctx); err != nil {
		return false, err
	}
	return n.runPod(ctx)
}

// createPod creates the API pod bound to the Docker node; a leftover one of the
// same name is deleted first.
func (n *node) createPod(ctx context.Context, pod *corev1.Pod) error {
	pods := n.client.CoreV1().Pods(pod.Namespace)
	if err := n.deletePod(ctx, pods, pod.Name); err != nil {
		return err
	}
	if n.opt.node == framework.DockerNodeName {
		if err := framework.RegisterDockerNode(ctx, n.client); err != nil {
			return err
		}
	}
	pod.Spec.NodeName = n.opt.node
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, framework.DockerNodeTolerations()...)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	n.pod = created
	return nil
}

// deletePod deletes a pod at once (no kubelet would confirm a graceful
// deletion on the Docker node) and waits until it is gone.
func (n *node) deletePod(ctx context.Context, pods interface {
	Delete(context.Context, string, metav1.DeleteOptions) error
	Get(context.Context, string, metav1.GetOptions) (*corev1.Pod, error)
}, name string) error {
	zero := int64(0)
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	for {
		if _, err := pods.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s still there: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (n *node) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range n.order {
		if err := n.docker.Do(ctx, "DELETE", "/containers/"+n.ids[c], url.Values{"force": {"1"}, "v": {"1"}}, nil, nil); err != nil {
			fmt.Fprintf(os.Stderr, "dockernode: remove container %s: %v\n", c, err)
		}
	}
	if n.dir != "" {
		_ = os.RemoveAll(n.dir)
	}
	if n.pod != nil {
		if err := n.deletePod(ctx, n.client.CoreV1().Pods(n.pod.Namespace), n.pod.Name); err != nil {
			fmt.Fprintf(os.Stderr, "dockernode: %v\n", err)
		}
	}
}

// setupVolumes materialises every volume and the service account dir on the host.
func (n *node) setupVolumes(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "dockernode-"+n.pod.Name+"-")
	if err != nil {
		return err
	}
	n.dir = dir
	ns := n.pod.Namespace
	for _, v := range n.pod.Spec.Volumes {
		p := filepath.Join(dir, "volumes", v.Name)
		files := map[string][]byte{}
		switch {
		case v.EmptyDir != nil:
		case v.HostPath != nil:
			n.vols[v.Name] = v.HostPath.Path
			continue
		case v.Projected != nil && isTokenVolume(v.Projected):
			// kube-api-access-*, added by the ServiceAccount admission plugin.
			n.vols[v.Name] = filepath.Join(dir, "serviceaccount")
			continue
		case v.DownwardAPI != nil:
			for _, it := range v.DownwardAPI.Items {
				if it.FieldRef == nil {
					return fmt.Errorf("volume %s: item %s: only fieldRef is supported", v.Name, it.Path)
				}
				val, err := n.field(it.FieldRef.FieldPath)
				if err != nil {
					return fmt.Errorf("volume %s: %w", v.Name, err)
				}
				files[it.Path] = []byte(val)
			}
		case v.Secret != nil:
			s, err := n.client.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			files = pick(s.Data, v.Secret.Items)
		case v.ConfigMap != nil:
			cm, err := n.client.CoreV1().ConfigMaps(ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			data := map[string][]byte{}
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
			files = pick(data, v.ConfigMap.Items)
		default:
			return fmt.Errorf("volume %s: unsupported volume type", v.Name)
		}
		if err := writeDir(p, files); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		n.vols[v.Name] = p
	}
	sa := n.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tok, err := n.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: n.pod.Name, UID: n.pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for service account %s/%s: %w", ns, sa, err)
	}
	ca, err := os.ReadFile(n.opt.caFile)
	if err != nil {
		return fmt.Errorf("cluster CA: %w", err)
	}
	return writeDir(filepath.Join(dir, "serviceaccount"), map[string][]byte{
		"token": []byte(tok.Status.Token), "ca.crt": ca, "namespace": []byte(ns)})
}

func isTokenVolume(p *corev1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

func pick(data map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	if len(items) == 0 {
		return data
	}
	out := map[string][]byte{}
	for _, it := range items {
		out[it.Path] = data[it.Key]
	}
	return out
}

// writeDir makes a world-writable dir (as an emptyDir is) holding files.
func writeDir(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// field resolves a downward API field path against the created pod.
func (n *node) field(path string) (string, error) {
	p := n.pod
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return n.opt.node, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.podIP":
		return n.opt.hostIP, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.annotations": p.Annotations, "metadata.labels": p.Labels} {
		if k, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(k, "']") {
			return m[strings.TrimSuffix(k, "']")], nil
		}
	}
	return "", fmt.Errorf("field path %q is not supported", path)
}

// env resolves a container's environment, plus what in-cluster config needs.
func (n *node) env(ctx context.Context, c corev1.Container) ([]string, error) {
	out := []string{"KUBERNETES_SERVICE_HOST=" + n.opt.hostIP, "KUBERNETES_SERVICE_PORT=" + n.opt.apiPort}
	for _, e := range c.Env {
		v := e.Value
		switch src := e.ValueFrom; {
		case src == nil:
		case src.FieldRef != nil:
			var err error
			if v, err = n.field(src.FieldRef.FieldPath); err != nil {
				return nil, fmt.Errorf("container %s env %s: %w", c.Name, e.Name, err)
			}
		case src.SecretKeyRef != nil:
			s, err := n.client.CoreV1().Secrets(n.pod.Namespace).Get(ctx, src.SecretKeyRef.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("container %s env %s: %w", c.Name, e.Name, err)
			}
			b, ok := s.Data[src.SecretKeyRef.Key]
			if !ok {
				return nil, fmt.Errorf("container %s env %s: secret %s has no key %s", c.Name, e.Name, s.Name, src.SecretKeyRef.Key)
			}
			v = string(b)
		default:
			return nil, fmt.Errorf("container %s env %s: unsupported valueFrom", c.Name, e.Name)
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

// create creates a container as cri-dockerd would, labelled for the docker backend.
func (n *node) create(ctx context.Context, c corev1.Container) error {
	env, err := n.env(ctx, c)
	if err != nil {
		return err
	}
	var binds []string
	saMounted := false
	for _, m := range c.VolumeMounts {
		saMounted = saMounted || m.MountPath == saMountPath
		host, ok := n.vols[m.Name]
		if !ok {
			return fmt.Errorf("container %s: mount of unknown volume %s", c.Name, m.Name)
		}
		if m.SubPath != "" {
			host = filepath.Join(host, m.SubPath)
			if err := writeDir(host, nil); err != nil {
				return fmt.Errorf("container %s: subPath %s: %w", c.Name, m.SubPath, err)
			}
		}
		b := host + ":" + m.MountPath
		if m.ReadOnly {
			b += ":ro"
		}
		binds = append(binds, b)
	}
	if !saMounted {
		binds = append(binds, filepath.Join(n.dir, "serviceaccount")+":"+saMountPath+":ro")
	}
	user := ""
	if sc := c.SecurityContext; sc != nil && sc.RunAsUser != nil {
		user = strconv.FormatInt(*sc.RunAsUser, 10)
	} else if psc := n.pod.Spec.SecurityContext; psc != nil && psc.RunAsUser != nil {
		user = strconv.FormatInt(*psc.RunAsUser, 10)
	}
	p := n.pod
	body := map[string]any{
		"Image": c.Image, "Entrypoint": c.Command, "Cmd": c.Args, "Env": env, "User": user, "WorkingDir": c.WorkingDir,
		"Labels": map[string]string{
			"io.kubernetes.pod.namespace": p.Namespace, "io.kubernetes.pod.name": p.Name,
			"io.kubernetes.pod.uid": string(p.UID), "io.kubernetes.container.name": c.Name,
			"annotation.io.kubernetes.container.restartCount": "0",
		},
		"HostConfig": map[string]any{"NetworkMode": "host", "Binds": binds},
	}
	name := fmt.Sprintf("k8s_%s_%s_%s_%s_0", c.Name, p.Name, p.Namespace, p.UID)
	var out struct{ Id string }
	if err := n.docker.Do(ctx, "POST", "/containers/create", url.Values{"name": {name}}, body, &out); err != nil {
		return fmt.Errorf("create container %s: %w", c.Name, err)
	}
	n.ids[c.Name] = out.Id
	n.order = append(n.order, c.Name)
	return nil
}

func (n *node) start(ctx context.Context, name string) error {
	if err := n.docker.Do(ctx, "POST", "/containers/"+n.ids[name]+"/start", nil, nil, nil); err != nil {
		return fmt.Errorf("start container %s: %w", name, err)
	}
	return nil
}

// wait blocks until a container has exited and returns its exit code.
func (n *node) wait(ctx context.Context, name string) (int, error) {
	var out struct{ StatusCode int }
	if err := n.docker.Do(ctx, "POST", "/containers/"+n.ids[name]+"/wait", url.Values{"condition": {"not-running"}}, nil, &out); err != nil {
		return -1, fmt.Errorf("wait for container %s: %w", name, err)
	}
	return out.StatusCode, nil
}

// runPod runs the containers in the kubelet's order and prints the report.
func (n *node) runPod(ctx context.Context) (bool, error) {
	spec := n.pod.Spec
	t0 := time.Now()
	var sidecars []corev1.Container
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars = append(sidecars, c)
			continue
		}
		if err := n.create(ctx, c); err != nil {
			return false, err
		}
		if err := n.start(ctx, c.Name); err != nil {
			return false, err
		}
		code, err := n.wait(ctx, c.Name)
		if err != nil {
			return false, err
		}
		if code != 0 {
			fmt.Printf("pod %s/%s (executor docker, on dockernode): Failed: init container %s exited %d\n", n.pod.Namespace, n.pod.Name, c.Name, code)
			n.printLogs(ctx, c.Name)
			return false, nil
		}
	}
	for _, c := range sidecars {
		if err := n.create(ctx, c); err != nil {
			return false, err
		}
		if err := n.start(ctx, c.Name); err != nil {
			return false, err
		}
	}
	for _, c := range spec.Containers {
		if err := n.create(ctx, c); err != nil {
			return false, err
		}
	}
	type exit struct {
		name string
		code int
		at   time.Time
		err  error
	}
	exits := make(chan exit, len(spec.Containers))
	for _, c := range spec.Containers {
		if err := n.start(ctx, c.Name); err != nil {
			return false, err
		}
		go func(name string) {
			code, err := n.wait(ctx, name)
			exits <- exit{name, code, time.Now(), err}
		}(c.Name)
	}
	codes, at := map[string]int{}, map[string]time.Time{}
	for range spec.Containers {
		e := <-exits
		if e.err != nil {
			return false, e.err
		}
		codes[e.name], at[e.name] = e.code, e.at
	}
	// Read the outputs now: stopping a sidecar that ignores SIGTERM takes the
	// whole grace period.
	p, err := n.client.CoreV1().Pods(n.pod.Namespace).Get(ctx, n.pod.Name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read outputs: %w", err)
	}
	grace := int64(30)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	for _, c := range sidecars {
		if err := n.docker.Do(ctx, "POST", "/containers/"+n.ids[c.Name]+"/stop", url.Values{"t": {strconv.FormatInt(grace, 10)}}, nil, nil); err != nil {
			return false, fmt.Errorf("stop sidecar %s: %w", c.Name, err)
		}
	}
	done := time.Now()
	ok := true
	for _, c := range spec.Containers {
		ok = ok && codes[c.Name] == 0
	}
	phase := "Succeeded"
	if !ok {
		phase = "Failed"
	}
	fmt.Printf("pod %s/%s (executor docker, on dockernode): %s\n", n.pod.Namespace, n.pod.Name, phase)
	mainCode := codes[workflow.MainContainerName]
	app.PrintOutputs(os.Stdout, p.Annotations[workflow.AnnotationOutputs], &mainCode)
	fmt.Println("timings:")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, c := range spec.Containers {
		fmt.Fprintf(tw, "  start -> %s exited (%d)\t%s\n", c.Name, codes[c.Name], at[c.Name].Sub(t0).Round(time.Millisecond))
	}
	fmt.Fprintf(tw, "  start -> finished (%d sidecar(s) stopped)\t%s\n", len(sidecars), done.Sub(t0).Round(time.Millisecond))
	tw.Flush()
	if !ok {
		for _, c := range spec.Containers {
			n.printLogs(ctx, c.Name)
		}
	}
	return ok, nil
}

// printLogs prints the tail of a container's log.
func (n *node) printLogs(ctx context.Context, name string) {
	const tail = 30
	log, err := n.docker.ContainerLogs(ctx, n.ids[name], tail)
	fmt.Printf("--- %s log (last %d lines) ---\n", name, tail)
	if err != nil {
		fmt.Printf("(could not read the log: %v)\n", err)
		return
	}
	fmt.Print(log)
}
