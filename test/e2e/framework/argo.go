//go:build e2e

package framework

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"
)

// Argo Workflows v3.3.8's own controller on the testbed (hack/argo.sh): one controller per
// executor image, each namespaced to its own namespace.

// WorkflowGVR is Argo's Workflow resource.
var WorkflowGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}

// LabelExecutor is the workflow label Argo's ConfigMap (manifests/argo) selects the container
// runtime executor by.
const LabelExecutor = "workflows.argoproj.io/container-runtime-executor"

// ArgoController is one of hack/argo.sh's controllers.
type ArgoController struct {
	Name      string // "upstream" (Argo's own argoexec) or "ours" (argoexec:dev-argo)
	Namespace string // ARGOEXEC_E2E_ARGO_NAMESPACE_<NAME> (argo-<name>)
	Image     string // ARGOEXEC_E2E_ARGO_IMAGE_<NAME>: the controller's --executor-image
}

// ArgoControllers lists the controllers whose images ARGOEXEC_E2E_ARGO_IMAGES names
// (comma-separated; default "upstream,ours": Argo's own argoexec and ours, compared). "dev" is
// ours from hack/argo.sh's optional dev controller (namespace argo-dev, the -argo variant of
// ARGOEXEC_DEV_IMAGE as its executor image), named "ours" in the tests: it stands for ours.
func ArgoControllers() ([]ArgoController, error) {
	var out []ArgoController
	for _, name := range strings.Split(getenv("ARGOEXEC_E2E_ARGO_IMAGES", "upstream,ours"), ",") {
		name = strings.TrimSpace(name)
		var def string
		switch name {
		case "":
			continue
		case "upstream":
			def = "argoexec-argo:v3.3.8"
		case "ours":
			def = "argoexec:dev-argo"
		case "dev":
			// hack/argo.sh's optional third controller: ours, from a worktree's own image
			def = getenv("ARGOEXEC_DEV_IMAGE", "argoexec:dev") + "-argo"
		default:
			return nil, fmt.Errorf("ARGOEXEC_E2E_ARGO_IMAGES: unknown %q (upstream, ours, dev)", name)
		}
		up := strings.ToUpper(name)
		c := ArgoController{
			Name:      name,
			Namespace: getenv("ARGOEXEC_E2E_ARGO_NAMESPACE_"+up, "argo-"+name),
			Image:     getenv("ARGOEXEC_E2E_ARGO_IMAGE_"+up, def),
		}
		if name == "dev" {
			c.Name = "ours" // the tests compare and judge it as ours
		}
		for _, o := range out {
			if o.Name == c.Name {
				return nil, fmt.Errorf("ARGOEXEC_E2E_ARGO_IMAGES: ours twice (ours and dev are both ours; name one)")
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// ArgoModuleDir is the Argo v3.3.8 Go module (examples/, manifests/): ARGOEXEC_E2E_ARGO_MODULE,
// else $(go env GOMODCACHE)/github.com/argoproj/argo-workflows/v3@v3.3.8.
func ArgoModuleDir() (string, error) {
	d := os.Getenv("ARGOEXEC_E2E_ARGO_MODULE")
	if d == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOMODCACHE: %w (set ARGOEXEC_E2E_ARGO_MODULE)", err)
		}
		d = filepath.Join(strings.TrimSpace(string(out)), "github.com", "argoproj", "argo-workflows", "v3@v3.3.8")
	}
	if _, err := os.Stat(filepath.Join(d, "examples")); err != nil {
		return "", fmt.Errorf("Argo module %s: %w (hack/lib/build.sh argo downloads it)", d, err)
	}
	return d, nil
}

// Argo submits workflows to one controller's namespace and collects what they left.
type Argo struct {
	Env        Env
	Controller ArgoController
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface
	S3         *minio.Client
	RunLabel   string // value of LabelE2E on every workflow this Argo submits
}

// NewArgo connects to the cluster and checks the controller's namespace and ConfigMap exist.
func NewArgo(ctx context.Context, c ArgoController, runLabel string) (*Argo, error) {
	env := LoadEnv()
	cfg, err := RestConfig(env)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, "workflow-controller-configmap", metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("Argo controller %s: namespace %s has no workflow-controller-configmap (hack/argo.sh up): %w", c.Name, c.Namespace, err)
	}
	u, err := url.Parse(env.S3Endpoint)
	if err != nil || env.S3AccessKey == "" {
		return nil, fmt.Errorf("S3 endpoint %q / keys not set (hack/cluster.sh up writes %s/s3.env): %v", env.S3Endpoint, env.State, err)
	}
	s3, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(env.S3AccessKey, env.S3SecretKey, ""), Secure: u.Scheme == "https", Region: env.S3Region})
	if err != nil {
		return nil, err
	}
	return &Argo{Env: env, Controller: c, Client: client, Dynamic: dyn, S3: s3, RunLabel: runLabel}, nil
}

// LoadWorkflow reads a workflow manifest (YAML) as an unstructured object.
func LoadWorkflow(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}

// EmptyDirVariant adds, to every container or script template with outputs, an emptyDir volume
// mounted at each output path's directory, and changes nothing else: Argo's k8sapi and kubelet
// executors cannot read outputs from the image's base layer. It returns the directories it mounted.
func EmptyDirVariant(wf *unstructured.Unstructured) ([]string, error) {
	templates, _, err := unstructured.NestedSlice(wf.Object, "spec", "templates")
	if err != nil {
		return nil, err
	}
	var all []string
	for i, raw := range templates {
		t, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.templates[%d] is not an object", i)
		}
		kind := "container"
		c, ok := t[kind].(map[string]any)
		if !ok {
			kind = "script"
			if c, ok = t[kind].(map[string]any); !ok {
				continue
			}
		}
		dirs := map[string]bool{}
		for _, section := range []string{"parameters", "artifacts"} {
			outs, _, _ := unstructured.NestedSlice(t, "outputs", section)
			for _, o := range outs {
				om, _ := o.(map[string]any)
				p, _, _ := unstructured.NestedString(om, "path")
				if p == "" {
					p, _, _ = unstructured.NestedString(om, "valueFrom", "path")
				}
				if p != "" {
					dirs[filepath.Dir(p)] = true
				}
			}
		}
		sorted := make([]string, 0, len(dirs))
		for d := range dirs {
			sorted = append(sorted, d)
		}
		sort.Strings(sorted)
		vols, _ := t["volumes"].([]any)
		mounts, _ := c["volumeMounts"].([]any)
		for j, d := range sorted {
			name := fmt.Sprintf("outputs-%d", j)
			vols = append(vols, map[string]any{"name": name, "emptyDir": map[string]any{}})
			mounts = append(mounts, map[string]any{"name": name, "mountPath": d})
			all = append(all, fmt.Sprintf("%s:%s", t["name"], d))
		}
		if len(sorted) > 0 {
			t["volumes"] = vols
			c["volumeMounts"] = mounts
			t[kind] = c
			templates[i] = t
		}
	}
	return all, unstructured.SetNestedSlice(wf.Object, templates, "spec", "templates")
}

// Submit creates the workflow with the executor label set to backend and the run label.
func (a *Argo) Submit(ctx context.Context, wf *unstructured.Unstructured, backend string) (*unstructured.Unstructured, error) {
	wf = wf.DeepCopy()
	labels := wf.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelExecutor] = backend
	labels[LabelE2E] = a.RunLabel
	wf.SetLabels(labels)
	wf.SetNamespace(a.Controller.Namespace)
	if img := os.Getenv("ARGOEXEC_E2E_ARGO_PATCH_IMAGE_" + strings.ToUpper(a.Controller.Name)); img != "" {
		if err := patchExecutorImage(wf, backend, img); err != nil {
			return nil, err
		}
	}
	return a.Dynamic.Resource(WorkflowGVR).Namespace(a.Controller.Namespace).Create(ctx, wf, metav1.CreateOptions{})
}

// patchExecutorImage gives every container and script template a podSpecPatch that runs init
// and wait from img instead of the controller's executor image: a way to run an image under the
// argo tier's controller without changing its ConfigMap (ARGOEXEC_E2E_ARGO_PATCH_IMAGE_<NAME>;
// set ARGOEXEC_E2E_ARGO_IMAGE_<NAME> to the same image). The init container is patched only
// where Argo v3.3.8 adds one (input artifacts, a script, or emissary), since a strategic merge
// patch would otherwise add it. A template's own podSpecPatch (JSON) is kept: the image is set
// on the init and wait entries it has, and those it lacks are added.
func patchExecutorImage(wf *unstructured.Unstructured, backend, img string) error {
	templates, _, err := unstructured.NestedSlice(wf.Object, "spec", "templates")
	if err != nil {
		return err
	}
	for i, raw := range templates {
		tm, _ := raw.(map[string]any)
		_, isContainer := tm["container"]
		_, isScript := tm["script"]
		if !isContainer && !isScript {
			continue
		}
		patch := map[string]any{}
		if own, ok := tm["podSpecPatch"].(string); ok {
			if err := json.Unmarshal([]byte(own), &patch); err != nil {
				return fmt.Errorf("template %v: its podSpecPatch is not JSON, so the executor image cannot be patched into it: %w", tm["name"], err)
			}
		}
		setImage(patch, "containers", "wait", img)
		inputs, _, _ := unstructured.NestedSlice(tm, "inputs", "artifacts")
		if len(inputs) > 0 || isScript || backend == "emissary" {
			setImage(patch, "initContainers", "init", img)
		}
		b, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		tm["podSpecPatch"] = string(b)
		templates[i] = tm
	}
	return unstructured.SetNestedSlice(wf.Object, templates, "spec", "templates")
}

// setImage sets img on the container called name in patch's list field, adding it if absent.
func setImage(patch map[string]any, field, name, img string) {
	list, _ := patch[field].([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["name"] == name {
			m["image"] = img
			return
		}
	}
	patch[field] = append(list, map[string]any{"name": name, "image": img})
}

// DeleteRun deletes every workflow this Argo submitted (their pods go with them).
func (a *Argo) DeleteRun(ctx context.Context) error {
	bg := metav1.DeletePropagationBackground
	return a.Dynamic.Resource(WorkflowGVR).Namespace(a.Controller.Namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{LabelSelector: LabelE2E + "=" + a.RunLabel})
}

// WaitForWorkflow watches the workflow until its phase is Succeeded, Failed or Error.
func (a *Argo) WaitForWorkflow(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	res := a.Dynamic.Resource(WorkflowGVR).Namespace(a.Controller.Namespace)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return res.Watch(ctx, o)
		},
	}
	var last *unstructured.Unstructured
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("workflow %s/%s was deleted", a.Controller.Namespace, name)
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		last = u
		switch phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase {
		case "Succeeded", "Failed", "Error":
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		phase := "never seen"
		if last != nil {
			phase, _, _ = unstructured.NestedString(last.Object, "status", "phase")
		}
		return last, fmt.Errorf("waiting for workflow %s/%s: %w (last phase %q)", a.Controller.Namespace, name, err, phase)
	}
	return last, nil
}

// NodeOutcome is what one node of a finished workflow left: Argo's node status, the bytes of its
// output artifacts (unpacked from S3) and, for pod nodes, main's log.
type NodeOutcome struct {
	Name            string // node name with the workflow's name replaced by "WF" (stable across runs)
	DisplayName     string
	Type            string // Pod, Steps, DAG, StepGroup, Skipped ...
	Template        string
	Phase           string
	Message         string
	ExitCode        string // outputs.exitCode ("" when none)
	Result          *string
	Parameters      map[string]string            // output parameters: name -> value
	Artifacts       map[string]map[string]string // output artifacts: name -> file in the archive -> content
	ArtifactKeys    map[string]string            // output artifacts: name -> S3 key, as reported
	InputParameters map[string]string
	MainLog         string
}

// WorkflowOutcome is a finished workflow, as the controller recorded it.
type WorkflowOutcome struct {
	Name             string
	Phase            string
	Message          string
	Duration         time.Duration // status.startedAt -> finishedAt (whole seconds)
	Nodes            []*NodeOutcome
	GlobalParameters map[string]string
	GlobalArtifacts  map[string]map[string]string
	ExecutorImages   map[string]bool // images of the init and wait containers of its pods
	Raw              *unstructured.Unstructured
}

// Node returns the node with the display name, or nil.
func (o *WorkflowOutcome) Node(displayName string) *NodeOutcome {
	for _, n := range o.Nodes {
		if n.DisplayName == displayName {
			return n
		}
	}
	return nil
}

// NodesOf returns the nodes run from the template, in name order.
func (o *WorkflowOutcome) NodesOf(template string) []*NodeOutcome {
	var out []*NodeOutcome
	for _, n := range o.Nodes {
		if n.Template == template && n.Type == "Pod" {
			out = append(out, n)
		}
	}
	return out
}

// Collect reads a finished workflow's nodes, artifacts (from S3) and pod logs.
func (a *Argo) Collect(ctx context.Context, wf *unstructured.Unstructured) (*WorkflowOutcome, error) {
	status, _, _ := unstructured.NestedMap(wf.Object, "status")
	o := &WorkflowOutcome{Name: wf.GetName(), Raw: wf, ExecutorImages: map[string]bool{}}
	o.Phase, _, _ = unstructured.NestedString(status, "phase")
	o.Message, _, _ = unstructured.NestedString(status, "message")
	s, _, _ := unstructured.NestedString(status, "startedAt")
	f, _, _ := unstructured.NestedString(status, "finishedAt")
	if ts, err := time.Parse(time.RFC3339, s); err == nil {
		if tf, err := time.Parse(time.RFC3339, f); err == nil {
			o.Duration = tf.Sub(ts)
		}
	}
	bucket, _, _ := unstructured.NestedString(status, "artifactRepositoryRef", "artifactRepository", "s3", "bucket")
	var errs []error
	var lastKeys map[string]string // the keys of the list arts read last
	// A gcs output reported as a key alone is in its template's archiveLocation.gcs bucket; an
	// artifactory or oss one is relocated onto its template's archiveLocation likewise.
	gcsBuckets := map[string]string{}
	archiveLocs := map[string]map[string]any{}
	templates, _, _ := unstructured.NestedSlice(wf.Object, "spec", "templates")
	for _, raw := range templates {
		tm, _ := raw.(map[string]any)
		name, _, _ := unstructured.NestedString(tm, "name")
		gcsBuckets[name], _, _ = unstructured.NestedString(tm, "archiveLocation", "gcs", "bucket")
		archiveLocs[name], _, _ = unstructured.NestedMap(tm, "archiveLocation")
	}
	arts := func(list []any, gcsBucket string, archiveLoc map[string]any) map[string]map[string]string {
		out := map[string]map[string]string{}
		lastKeys = map[string]string{}
		for _, raw := range list {
			am, _ := raw.(map[string]any)
			name, _, _ := unstructured.NestedString(am, "name")
			if other, store := otherStore(am); other != nil {
				def, _, _ := unstructured.NestedMap(archiveLoc, store)
				fetch := a.fetchArtifactoryArtifact
				if store == "oss" {
					fetch = a.fetchOSSArtifact
				}
				files, key, err := fetch(ctx, other, def)
				lastKeys[name] = key
				if err != nil {
					errs = append(errs, fmt.Errorf("artifact %s (%s %s): %w", name, store, key, err))
					continue
				}
				out[name] = files
				continue
			}
			key, _, _ := unstructured.NestedString(am, "s3", "key")
			b, _, _ := unstructured.NestedString(am, "s3", "bucket")
			fetch, where := a.fetchArtifact, "s3"
			if gk, ok, _ := unstructured.NestedString(am, "gcs", "key"); ok {
				key, fetch, where = gk, a.fetchGCSArtifact, "gs"
				if b, _, _ = unstructured.NestedString(am, "gcs", "bucket"); b == "" {
					b = gcsBucket
				}
			}
			if b == "" && where == "s3" {
				b = bucket
			}
			if key == "" {
				continue
			}
			lastKeys[name] = key
			files, err := fetch(ctx, b, key)
			if err != nil {
				errs = append(errs, fmt.Errorf("artifact %s (%s://%s/%s): %w", name, where, b, key, err))
				continue
			}
			out[name] = files
		}
		return out
	}
	params := func(list []any) map[string]string {
		out := map[string]string{}
		for _, raw := range list {
			pm, _ := raw.(map[string]any)
			name, _, _ := unstructured.NestedString(pm, "name")
			v, _, _ := unstructured.NestedString(pm, "value")
			out[name] = v
		}
		return out
	}
	gp, _, _ := unstructured.NestedSlice(status, "outputs", "parameters")
	ga, _, _ := unstructured.NestedSlice(status, "outputs", "artifacts")
	o.GlobalParameters, o.GlobalArtifacts = params(gp), arts(ga, "", nil)

	nodes, _, _ := unstructured.NestedMap(status, "nodes")
	for id, raw := range nodes {
		nm, _ := raw.(map[string]any)
		n := &NodeOutcome{}
		name, _, _ := unstructured.NestedString(nm, "name")
		n.Name = "WF" + strings.TrimPrefix(name, wf.GetName())
		n.DisplayName, _, _ = unstructured.NestedString(nm, "displayName")
		if n.DisplayName == wf.GetName() {
			n.DisplayName = "WF"
		}
		n.Type, _, _ = unstructured.NestedString(nm, "type")
		n.Template, _, _ = unstructured.NestedString(nm, "templateName")
		n.Phase, _, _ = unstructured.NestedString(nm, "phase")
		n.Message, _, _ = unstructured.NestedString(nm, "message")
		n.ExitCode, _, _ = unstructured.NestedString(nm, "outputs", "exitCode")
		if r, ok, _ := unstructured.NestedString(nm, "outputs", "result"); ok {
			n.Result = &r
		}
		op, _, _ := unstructured.NestedSlice(nm, "outputs", "parameters")
		oa, _, _ := unstructured.NestedSlice(nm, "outputs", "artifacts")
		ip, _, _ := unstructured.NestedSlice(nm, "inputs", "parameters")
		n.Parameters, n.Artifacts, n.InputParameters = params(op), arts(oa, gcsBuckets[n.Template], archiveLocs[n.Template]), params(ip)
		n.ArtifactKeys = lastKeys
		if n.Type == "Pod" && n.Phase != "Skipped" && n.Phase != "Pending" {
			// POD_NAMES v1 (v3.3.8's default): the pod is named after the node ID
			if pod, err := a.Client.CoreV1().Pods(a.Controller.Namespace).Get(ctx, id, metav1.GetOptions{}); err == nil {
				for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
					if c.Name == "init" || c.Name == "wait" {
						o.ExecutorImages[c.Image] = true
					}
				}
				n.MainLog, _ = a.podLog(ctx, id, "main")
			} else if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("pod %s: %w", id, err))
			}
		}
		o.Nodes = append(o.Nodes, n)
	}
	sort.Slice(o.Nodes, func(i, j int) bool { return o.Nodes[i].Name < o.Nodes[j].Name })
	return o, errors.Join(errs...)
}

// otherStore is an artifact's artifactory or oss location and the store's name, or nil when it
// has neither (s3 and gcs are read in Collect itself).
func otherStore(art map[string]any) (map[string]any, string) {
	for _, store := range []string{"artifactory", "oss"} {
		if m, ok, _ := unstructured.NestedMap(art, store); ok {
			return m, store
		}
	}
	return nil, ""
}

func (a *Argo) podLog(ctx context.Context, pod, container string) (string, error) {
	rc, err := a.Client.CoreV1().Pods(a.Controller.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, rc)
	return buf.String(), err
}

// fetchArtifact reads an object and unpacks it: a .tgz gives its regular files (path -> content),
// anything else is one file named "". A key with no object but objects under KEY/ (a directory
// stored with `archive: none`, as Argo's S3 driver lays one out) gives those objects, by their
// path below KEY/ prefixed with "dir:".
func (a *Argo) fetchArtifact(ctx context.Context, bucket, key string) (map[string]string, error) {
	obj, err := a.S3.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return a.fetchDirectory(ctx, bucket, key)
	}
	if err != nil {
		return nil, err
	}
	return archiveFiles(data)
}

// archiveFiles is an object's content as fetchArtifact gives it: a .tgz's regular files (path
// -> content), anything else one file named "".
func archiveFiles(data []byte) (map[string]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return map[string]string{"": string(data)}, nil
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("unpacking: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = string(b)
	}
	return files, nil
}

// fetchDirectory reads every object under key/ (path below it, prefixed "dir:", -> content);
// none is an error.
func (a *Argo) fetchDirectory(ctx context.Context, bucket, key string) (map[string]string, error) {
	prefix := strings.TrimSuffix(key, "/") + "/"
	files := map[string]string{}
	for o := range a.S3.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		obj, err := a.S3.GetObject(ctx, bucket, o.Key, minio.GetObjectOptions{})
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(obj)
		obj.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Key, err)
		}
		files["dir:"+strings.TrimPrefix(o.Key, prefix)] = string(b)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no object at the key, and none under %s", prefix)
	}
	return files, nil
}

// Fingerprint is the outcome in a form two executors must agree on: workflow phase, and per node
// its phase, exit code, parameters, result and artifact contents. skipResults leaves out results
// and parameters that differ between runs by design (random numbers).
func (o *WorkflowOutcome) Fingerprint(skipResults bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow %s\n", o.Phase)
	kv := func(label string, m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s %s=%q\n", label, k, m[k])
		}
	}
	kv("global-param", o.GlobalParameters)
	for name, files := range o.GlobalArtifacts {
		kv("global-artifact "+name, files)
	}
	for _, n := range o.Nodes {
		fmt.Fprintf(&b, "node %s [%s %s] %s exit=%q\n", n.Name, n.Type, n.Template, n.Phase, n.ExitCode)
		if skipResults {
			continue
		}
		if n.Result != nil {
			fmt.Fprintf(&b, "  result=%q\n", *n.Result)
		}
		kv("param", n.Parameters)
		kv("input", n.InputParameters)
		names := make([]string, 0, len(n.Artifacts))
		for k := range n.Artifacts {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			kv("artifact "+k, n.Artifacts[k])
		}
	}
	return b.String()
}

// Describe is a failure dump: workflow phase and message, each node, and the pods' statuses.
func (a *Argo) Describe(ctx context.Context, o *WorkflowOutcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow %s/%s phase=%s message=%q\n", a.Controller.Namespace, o.Name, o.Phase, o.Message)
	for _, n := range o.Nodes {
		fmt.Fprintf(&b, "  node %s (%s %s) %s exit=%q msg=%q\n", n.Name, n.Type, n.Template, n.Phase, n.ExitCode, n.Message)
	}
	pods, err := a.Client.CoreV1().Pods(a.Controller.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "workflows.argoproj.io/workflow=" + o.Name})
	if err == nil {
		for i := range pods.Items {
			p := &pods.Items[i]
			fmt.Fprintf(&b, "  pod %s %s %s\n", p.Name, p.Status.Phase, DescribeStatuses(p))
			for _, c := range []string{"init", "wait"} {
				if l, err := a.podLog(ctx, p.Name, c); err == nil && l != "" {
					fmt.Fprintf(&b, "  --- %s log of %s (last 2000 bytes):\n%s\n", c, p.Name, tail(l, 2000))
				}
			}
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// ArgoTimeout bounds one workflow: Argo v3.3's controller requeues every 10 s, so a three-step
// workflow takes 30-40 s even when every pod is quick.
const ArgoTimeout = 4 * time.Minute

// ParseWorkflow reads a workflow manifest (YAML) from memory as an unstructured object.
func ParseWorkflow(data []byte) (*unstructured.Unstructured, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	return obj, obj.UnmarshalJSON(js)
}

// GetWorkflow reads one workflow of the controller's namespace.
func (a *Argo) GetWorkflow(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return a.Dynamic.Resource(WorkflowGVR).Namespace(a.Controller.Namespace).Get(ctx, name, metav1.GetOptions{})
}

// DeleteWorkflow deletes one workflow (its pods go with it).
func (a *Argo) DeleteWorkflow(ctx context.Context, name string) error {
	bg := metav1.DeletePropagationBackground
	err := a.Dynamic.Resource(WorkflowGVR).Namespace(a.Controller.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// WorkflowPods lists the pods of a workflow (label workflows.argoproj.io/workflow).
func (a *Argo) WorkflowPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	pods, err := a.Client.CoreV1().Pods(a.Controller.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "workflows.argoproj.io/workflow=" + name})
	if err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// PodLog is a container's whole log.
func (a *Argo) PodLog(ctx context.Context, pod, container string) (string, error) {
	return a.podLog(ctx, pod, container)
}
