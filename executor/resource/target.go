package resource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// target is one object the action is on.
type target struct {
	mapping   *meta.RESTMapping
	namespace string // empty for a cluster-scoped kind
	name      string
	// obj is the manifest's object (nil when the flags name the object).
	obj *unstructured.Unstructured
	// patchType and patch are action patch's.
	patchType types.PatchType
	patch     []byte
}

// String names the object as Argo's argoexec logs it (kind.group/name) and
// says where it is.
func (t *target) String() string {
	kind := strings.ToLower(t.mapping.GroupVersionKind.Kind)
	if g := t.mapping.GroupVersionKind.Group; g != "" {
		kind += "." + g
	}
	name := t.name
	if name == "" && t.obj != nil && t.obj.GetGenerateName() != "" {
		name = t.obj.GetGenerateName() + "*"
	}
	if t.namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + name + " in namespace " + t.namespace
}

func (e *Executor) resourceClient(t *target) dynamic.ResourceInterface {
	if t.mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return e.Client.Resource(t.mapping.Resource).Namespace(t.namespace)
	}
	return e.Client.Resource(t.mapping.Resource)
}

// targets resolves the objects the action is on: the manifest's object, or
// the objects the flags name (TYPE NAME..., TYPE/NAME..., TYPE -l SELECTOR).
func (e *Executor) targets(ctx context.Context, fl *flags) ([]*target, error) {
	res := e.Template.Resource
	manifest := strings.TrimSpace(res.Manifest)
	jsonPatch := e.Action == ActionPatch && res.MergeStrategy == MergeJSON
	if len(fl.args) > 0 || jsonPatch {
		if len(fl.args) > 0 && manifest != "" && !jsonPatch {
			return nil, fmt.Errorf("the resource template names objects both in its manifest and in flags %q: name them in one place", fl.args)
		}
		switch e.Action {
		case ActionGet, ActionDelete, ActionPatch:
		default:
			return nil, fmt.Errorf("resource template flags %q name objects, which action %s does not take (only get, delete, and patch with mergeStrategy json do): put the object in the manifest", fl.args, e.Action)
		}
		tgts, err := e.targetsFromArgs(ctx, fl)
		if err != nil {
			return nil, err
		}
		if jsonPatch {
			if len(tgts) != 1 {
				return nil, fmt.Errorf("a patch with mergeStrategy json needs the object in flags, as [TYPE, NAME] or [TYPE/NAME], e.g. flags: [pod, \"{{pod.name}}\"]; the flags %q name %d objects", fl.args, len(tgts))
			}
			if manifest == "" {
				return nil, errors.New("a patch with mergeStrategy json needs the JSON patch (a list of operations) in the manifest")
			}
			p, err := yaml.YAMLToJSON([]byte(manifest))
			if err != nil {
				return nil, fmt.Errorf("the manifest of a patch with mergeStrategy json is not a JSON patch (YAML or JSON list of operations): %w", err)
			}
			tgts[0].patchType, tgts[0].patch = types.JSONPatchType, p
		}
		return tgts, nil
	}
	if manifest == "" {
		return nil, errors.New("the resource template has neither a manifest nor flags naming an object: give it a manifest")
	}
	obj, err := decodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	t, err := e.targetFromObject(obj, fl)
	if err != nil {
		return nil, err
	}
	switch e.Action {
	case ActionPatch:
		strategy := res.MergeStrategy
		if strategy == "" {
			strategy = MergeStrategic
		}
		switch strategy {
		case MergeStrategic:
			t.patchType = types.StrategicMergePatchType
		case MergeMerge:
			t.patchType = types.MergePatchType
		default:
			return nil, fmt.Errorf("resource template mergeStrategy %q is not supported: want strategic, merge or json", res.MergeStrategy)
		}
		if t.patch, err = obj.MarshalJSON(); err != nil {
			return nil, fmt.Errorf("encode the manifest as a patch: %w", err)
		}
	case ActionCreate:
		if t.name == "" && obj.GetGenerateName() == "" {
			return nil, fmt.Errorf("the manifest's %s has neither metadata.name nor metadata.generateName: give it one", obj.GetKind())
		}
	default:
		if t.name == "" {
			return nil, fmt.Errorf("the manifest's %s has no metadata.name, which action %s needs (metadata.generateName works with create only)", obj.GetKind(), e.Action)
		}
	}
	if e.Template.Resource.SetOwnerReference && (e.Action == ActionCreate || e.Action == ActionApply || e.Action == ActionReplace) {
		if err := e.setOwnerReference(ctx, t.obj); err != nil {
			return nil, err
		}
	}
	return []*target{t}, nil
}

// decodeManifest reads the manifest's one object (YAML or JSON).
func decodeManifest(manifest string) (*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decode the resource template's manifest: %w", err)
		}
		if m == nil {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	switch {
	case len(objs) == 0:
		return nil, errors.New("the resource template's manifest holds no object")
	case len(objs) > 1:
		return nil, fmt.Errorf("the resource template's manifest holds %d objects: a resource template acts on one object (as Argo's, whose outputs and conditions need one); use one step per object", len(objs))
	}
	obj := objs[0]
	if obj.IsList() {
		return nil, errors.New("the resource template's manifest is a List: a resource template acts on one object; use one step per object")
	}
	if obj.GetKind() == "" || obj.GetAPIVersion() == "" {
		return nil, errors.New("the resource template's manifest has no apiVersion or kind: Kind and name are both required")
	}
	return obj, nil
}

// targetFromObject maps the manifest's object and settles its namespace:
// the manifest's, else --namespace, else the pod's; a manifest and flag that
// disagree are an error, as in kubectl.
func (e *Executor) targetFromObject(obj *unstructured.Unstructured, fl *flags) (*target, error) {
	gvk := obj.GroupVersionKind()
	m, err := e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, mappingError(fmt.Sprintf("kind %s (apiVersion %s)", gvk.Kind, obj.GetAPIVersion()), err)
	}
	t := &target{mapping: m, name: obj.GetName(), obj: obj}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		obj.SetNamespace("")
		return t, nil
	}
	ns := obj.GetNamespace()
	if ns != "" && fl.namespace != "" && ns != fl.namespace {
		return nil, fmt.Errorf("the manifest's namespace %q is not the flag's --namespace %q: remove one", ns, fl.namespace)
	}
	if ns == "" {
		ns = fl.namespace
	}
	if ns == "" {
		ns = e.PodNamespace
	}
	obj.SetNamespace(ns)
	t.namespace = ns
	return t, nil
}

// targetsFromArgs resolves TYPE NAME..., TYPE/NAME... or TYPE with a selector.
func (e *Executor) targetsFromArgs(ctx context.Context, fl *flags) ([]*target, error) {
	ns := fl.namespace
	if ns == "" {
		ns = e.PodNamespace
	}
	type ref struct{ typ, name string }
	var refs []ref
	switch {
	case len(fl.args) == 0:
		return nil, errors.New("no object named: give flags [TYPE, NAME] or [TYPE/NAME]")
	case strings.Contains(fl.args[0], "/"):
		for _, a := range fl.args {
			typ, name, ok := strings.Cut(a, "/")
			if !ok || typ == "" || name == "" {
				return nil, fmt.Errorf("resource template flag %q: want TYPE/NAME when the first argument is %q", a, fl.args[0])
			}
			refs = append(refs, ref{typ, name})
		}
	default:
		for _, n := range fl.args[1:] {
			if strings.Contains(n, "/") {
				return nil, fmt.Errorf("resource template flag %q: there is no TYPE/NAME form after a TYPE argument %q", n, fl.args[0])
			}
			refs = append(refs, ref{fl.args[0], n})
		}
		if len(refs) == 0 && fl.selector == "" {
			return nil, fmt.Errorf("resource template flags name the type %q but no object: add a NAME, or --selector (delete)", fl.args[0])
		}
	}
	if fl.selector != "" && len(refs) > 0 {
		return nil, fmt.Errorf("resource template flags give both names %q and --selector %q: use one", fl.args[1:], fl.selector)
	}
	mappings := map[string]*meta.RESTMapping{}
	mapFor := func(typ string) (*meta.RESTMapping, error) {
		if m, ok := mappings[typ]; ok {
			return m, nil
		}
		m, err := e.mappingFor(typ)
		if err != nil {
			return nil, err
		}
		mappings[typ] = m
		return m, nil
	}
	var out []*target
	for _, r := range refs {
		m, err := mapFor(r.typ)
		if err != nil {
			return nil, err
		}
		t := &target{mapping: m, name: r.name}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			t.namespace = ns
		}
		out = append(out, t)
	}
	if fl.selector != "" {
		m, err := mapFor(fl.args[0])
		if err != nil {
			return nil, err
		}
		probe := &target{mapping: m}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			probe.namespace = ns
		}
		var list *unstructured.UnstructuredList
		err = e.retry(ctx, func() error {
			var err error
			list, err = e.resourceClient(probe).List(ctx, metav1.ListOptions{LabelSelector: fl.selector})
			return err
		})
		if err != nil {
			return nil, e.apiError(ctx, "list", probe, err)
		}
		for _, it := range list.Items {
			out = append(out, &target{mapping: m, namespace: probe.namespace, name: it.GetName()})
		}
		e.Log.Infof("--selector %s matches %d %s", fl.selector, len(out), m.Resource.Resource)
	}
	return out, nil
}

// mappingFor maps a kubectl resource argument (pod, pods, cm, deployments.apps,
// jobs.v1.batch) to its resource.
func (e *Executor) mappingFor(arg string) (*meta.RESTMapping, error) {
	arg = strings.ToLower(arg)
	var gvr schema.GroupVersionResource
	var err error
	if full, gr := schema.ParseResourceArg(arg); full != nil {
		gvr, err = e.Mapper.ResourceFor(*full)
		if err != nil {
			gvr, err = e.Mapper.ResourceFor(gr.WithVersion(""))
		}
	} else {
		gvr, err = e.Mapper.ResourceFor(gr.WithVersion(""))
	}
	if err != nil {
		return nil, mappingError(fmt.Sprintf("resource type %q", arg), err)
	}
	gvk, err := e.Mapper.KindFor(gvr)
	if err != nil {
		return nil, mappingError(fmt.Sprintf("resource type %q", arg), err)
	}
	m, err := e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, mappingError(fmt.Sprintf("resource type %q", arg), err)
	}
	return m, nil
}

func mappingError(what string, err error) error {
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("the cluster serves no %s (is its CustomResourceDefinition installed, and the apiVersion right?): %w", what, err)
	}
	return fmt.Errorf("look up %s in the cluster's API discovery: %w", what, err)
}

// podGVR is the core Pod resource.
func podGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: "pods"}
}

// setOwnerReference makes the workflow the object's controller. Argo
// v3.3.8's controller already writes that reference into the manifest
// before the pod starts; only when the manifest has no Workflow owner is
// the owner read from the pod's own ownerReferences.
func (e *Executor) setOwnerReference(ctx context.Context, obj *unstructured.Unstructured) error {
	refs := obj.GetOwnerReferences()
	for _, r := range refs {
		if r.Kind == "Workflow" && strings.HasPrefix(r.APIVersion, "argoproj.io/") {
			return nil
		}
	}
	pod, err := e.Client.Resource(podGVR()).Namespace(e.PodNamespace).Get(ctx, e.PodName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("setOwnerReference: read pod %s/%s to find its Workflow (grant the workflow's service account get on pods): %w", e.PodNamespace, e.PodName, err)
		}
		return fmt.Errorf("setOwnerReference: read pod %s/%s to find its Workflow: %w", e.PodNamespace, e.PodName, e.ctxErr(ctx, err))
	}
	for _, r := range pod.GetOwnerReferences() {
		if r.Kind == "Workflow" && strings.HasPrefix(r.APIVersion, "argoproj.io/") {
			t, f := true, true
			obj.SetOwnerReferences(append(refs, metav1.OwnerReference{
				APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID,
				Controller: &t, BlockOwnerDeletion: &f,
			}))
			return nil
		}
	}
	return fmt.Errorf("setOwnerReference: pod %s/%s has no Workflow among its ownerReferences, so the object cannot be owned by one (Argo's controller sets both); remove setOwnerReference", e.PodNamespace, e.PodName)
}

// apiError says what failed on which object and, for a refusal, what to grant.
func (e *Executor) apiError(ctx context.Context, verb string, t *target, err error) error {
	gr := t.mapping.Resource.GroupResource()
	where := "cluster-wide (a ClusterRole)"
	if t.namespace != "" {
		where = "in namespace " + t.namespace + " (a Role there)"
	}
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %s: forbidden: grant the workflow's service account the verb %q on resource %q in API group %q %s: %w",
			verb, t, verb, gr.Resource, gr.Group, where, err)
	case apierrors.IsUnsupportedMediaType(err) && t.patchType == types.StrategicMergePatchType:
		return fmt.Errorf("%s %s: the API server does not take a strategic merge patch for this kind (custom resources have none): set mergeStrategy: merge: %w", verb, t, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s: not found: %w", verb, t, err)
	case apierrors.IsConflict(err) && e.Action == ActionApply:
		return fmt.Errorf("apply %s: conflicts with fields another manager owns (the flag --force-conflicts=false keeps them): %w", t, err)
	}
	return fmt.Errorf("%s %s: %w", verb, t, e.ctxErr(ctx, err))
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// transient says whether an API error may pass on a retry.
func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}
