package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/itchyny/gojq"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// checkOutputParameters refuses, before any action, output parameters a
// resource template cannot fill: valueFrom.path (there is no main
// container's file system) and bad jsonPath or jqFilter expressions.
func checkOutputParameters(params []wf.Parameter) error {
	var errs []error
	for _, p := range params {
		switch {
		case p.ValueFrom == nil:
		case p.ValueFrom.JSONPath != "":
			if err := jsonpath.New(p.Name).Parse(p.ValueFrom.JSONPath); err != nil {
				errs = append(errs, fmt.Errorf("output parameter %q: jsonPath %q: %w", p.Name, p.ValueFrom.JSONPath, err))
			}
		case p.ValueFrom.JQFilter != "":
			if _, err := compileJQ(p.ValueFrom.JQFilter); err != nil {
				errs = append(errs, fmt.Errorf("output parameter %q: jqFilter %q: %w", p.Name, p.ValueFrom.JQFilter, err))
			}
		case p.ValueFrom.Path != "":
			errs = append(errs, fmt.Errorf("output parameter %q: valueFrom.path has no meaning in a resource template (it runs no container of yours): use valueFrom.jsonPath or valueFrom.jqFilter", p.Name))
		}
	}
	return errors.Join(errs...)
}

func compileJQ(filter string) (*gojq.Code, error) {
	q, err := gojq.Parse(filter)
	if err != nil {
		return nil, err
	}
	return gojq.Compile(q)
}

// defaultOutputs are the parameters as Argo reports them when there is no
// object (get --ignore-not-found): each valueFrom parameter takes its
// default, else the empty string.
func defaultOutputs(params []wf.Parameter) *wf.NodeOutputs {
	out := &wf.NodeOutputs{}
	for _, p := range params {
		if p.ValueFrom != nil {
			v := wf.AnyString("")
			if p.ValueFrom.Default != nil {
				v = *p.ValueFrom.Default
			}
			p.Value = &v
		}
		out.Parameters = append(out.Parameters, p)
	}
	return out
}

// outputs reads the object once more, after the wait, and fills in each
// output parameter as Argo's argoexec does: jsonPath as `kubectl get -o
// jsonpath=...` prints it (missing keys print nothing), jqFilter as `kubectl
// get -o json | jq -rc ...` prints it (each result on a line of its own,
// strings raw, the rest compact JSON); neither is trimmed. A parameter whose
// expression fails takes valueFrom.default when it has one. Parameters
// without valueFrom are echoed as declared.
func (e *Executor) outputs(ctx context.Context, t *target, params []wf.Parameter) (*wf.NodeOutputs, error) {
	var obj *unstructured.Unstructured
	err := e.retry(ctx, func() error {
		var err error
		obj, err = e.resourceClient(t).Get(ctx, t.name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		err = e.apiError(ctx, "get", t, err)
	}
	out := &wf.NodeOutputs{}
	var errs []error
	for _, p := range params {
		if p.ValueFrom == nil || (p.ValueFrom.JSONPath == "" && p.ValueFrom.JQFilter == "") {
			out.Parameters = append(out.Parameters, p)
			continue
		}
		var val string
		verr := err
		if verr == nil {
			if p.ValueFrom.JSONPath != "" {
				val, verr = evalJSONPath(p.Name, p.ValueFrom.JSONPath, obj)
			} else {
				val, verr = evalJQ(p.ValueFrom.JQFilter, obj)
			}
		}
		switch {
		case verr == nil:
			p.Value = wf.AnyStringPtr(val)
			e.Log.Infof("Saved output parameter: %s, value: %s", p.Name, val)
		case p.ValueFrom.Default != nil:
			e.Log.Infof("output parameter %s: %v: using its default", p.Name, verr)
			p.Value = p.ValueFrom.Default
		default:
			errs = append(errs, fmt.Errorf("output parameter %q: %w", p.Name, verr))
			continue
		}
		out.Parameters = append(out.Parameters, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// evalJSONPath prints the object through a jsonpath template as kubectl
// does (missing keys allowed).
func evalJSONPath(name, expr string, obj *unstructured.Unstructured) (string, error) {
	j := jsonpath.New(name).AllowMissingKeys(true)
	if err := j.Parse(expr); err != nil {
		return "", fmt.Errorf("jsonPath %q: %w", expr, err)
	}
	var buf bytes.Buffer
	if err := j.Execute(&buf, obj.UnstructuredContent()); err != nil {
		return "", fmt.Errorf("jsonPath %q: %w", expr, err)
	}
	return buf.String(), nil
}

// evalJQ runs a jq filter over the object's JSON as `jq -rc` does.
func evalJQ(filter string, obj *unstructured.Unstructured) (string, error) {
	code, err := compileJQ(filter)
	if err != nil {
		return "", fmt.Errorf("jqFilter %q: %w", filter, err)
	}
	b, err := obj.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("encode the object: %w", err)
	}
	var in any
	if err := json.Unmarshal(b, &in); err != nil { // numbers as float64, as jq reads them
		return "", fmt.Errorf("decode the object: %w", err)
	}
	var buf bytes.Buffer
	iter := code.Run(in)
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break
			}
			return "", fmt.Errorf("jqFilter %q: %w", filter, err)
		}
		if s, ok := v.(string); ok {
			buf.WriteString(s)
		} else {
			enc, err := gojq.Marshal(v)
			if err != nil {
				return "", fmt.Errorf("jqFilter %q: encode a result: %w", filter, err)
			}
			buf.Write(enc)
		}
		buf.WriteByte('\n')
	}
	return buf.String(), nil
}
