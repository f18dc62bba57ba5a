package podspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// SubstituteInputs returns a copy of tmpl with every {{inputs.parameters.NAME}}
// replaced by that parameter's value, or its default. A reference to an
// undeclared parameter, or to one with neither value nor default, is an
// error naming it. Other {{...}} expressions are left alone.
func SubstituteInputs(tmpl *workflow.Template) (*workflow.Template, error) {
	values, noValue := inputValues(tmpl)
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return nil, fmt.Errorf("substitute input parameters: %w", err)
	}
	var unknown, empty []string
	ref := regexp.MustCompile(`\{\{\s*inputs\.parameters\.([^{}\s]+)\s*\}\}`)
	out := ref.ReplaceAllFunc(raw, func(m []byte) []byte {
		name := string(ref.FindSubmatch(m)[1])
		v, ok := values[name]
		switch {
		case ok:
			return jsonStringBody(v)
		case slices.Contains(noValue, name):
			empty = appendOnce(empty, name)
		default:
			unknown = appendOnce(unknown, name)
		}
		return m
	})
	if err := refErrors(tmpl, unknown, empty); err != nil {
		return nil, fmt.Errorf("substitute input parameters: %w", err)
	}
	var t workflow.Template
	if err := json.Unmarshal(out, &t); err != nil {
		return nil, fmt.Errorf("substitute input parameters: %w", err)
	}
	return &t, nil
}

// inputValues maps each input parameter to its value (or default) and
// lists those that have neither.
func inputValues(tmpl *workflow.Template) (map[string]string, []string) {
	values := map[string]string{}
	var noValue []string
	for _, p := range tmpl.Inputs.Parameters {
		switch {
		case p.Value != nil:
			values[p.Name] = p.Value.String()
		case p.Default != nil:
			values[p.Name] = p.Default.String()
		default:
			noValue = append(noValue, p.Name)
		}
	}
	return values, noValue
}

func refErrors(tmpl *workflow.Template, unknown, empty []string) error {
	var errs []error
	declared := make([]string, 0, len(tmpl.Inputs.Parameters))
	for _, p := range tmpl.Inputs.Parameters {
		declared = append(declared, p.Name)
	}
	for _, name := range unknown {
		errs = append(errs, fmt.Errorf("unknown reference {{inputs.parameters.%s}}: the template declares input parameters [%s]", name, strings.Join(declared, ", ")))
	}
	for _, name := range empty {
		errs = append(errs, fmt.Errorf("{{inputs.parameters.%s}}: input parameter %q has neither value nor default", name, name))
	}
	return errors.Join(errs...)
}

// jsonStringBody is s encoded as the inside of a JSON string.
func jsonStringBody(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return b[1 : len(b)-1]
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// templateJSON is the template as it is carried in the pod annotation:
// compact, without HTML escaping (which would grow a script's `<`, `>` and
// `&` sixfold).
func templateJSON(t *workflow.Template) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return "", fmt.Errorf("encode template: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// reservedNames are the container and volume names the pod builder uses.
func reservedContainerNames() []string {
	return []string{workflow.MainContainerName, workflow.WaitContainerName, workflow.InitContainerName}
}

// The backends' volume names are checked once Shape has added them
// (checkBackendVolumes).
func reservedVolumeNames() []string {
	return []string{workflow.VarRunArgoVolume, workflow.PodMetadataVolume, workflow.ScriptVolume, workflow.InputArtifactsVolume}
}

// validateTemplate checks what the pod builder relies on.
func validateTemplate(t *workflow.Template) error {
	_, refused := refuseUnsupported(t)
	errs := []error{refused}
	otherKind := t.Steps != nil || t.DAG != nil || t.Suspend != nil || t.Resource != nil || t.Data != nil ||
		t.ContainerSet != nil || t.HTTP != nil || t.Plugin != nil
	switch {
	case t.Container == nil && t.Script == nil && otherKind:
		// refused above, by its kind
	case t.Container == nil && t.Script == nil:
		errs = append(errs, errors.New("template has neither container nor script"))
	case t.Container != nil && t.Script != nil:
		errs = append(errs, errors.New("template has both container and script: set one"))
	case t.Script != nil && len(t.Script.Command) == 0:
		errs = append(errs, errors.New("script.command is empty: say which interpreter runs the source, e.g. [sh] or [python]"))
	}
	errs = append(errs, validateNames(t)...)
	errs = append(errs, validateVolumeMounts(t)...)
	errs = append(errs, validateArtifacts("inputs", t.Inputs.Artifacts)...)
	for _, key := range []string{workflow.LabelWorkflow} {
		if _, ok := t.Metadata.Labels[key]; ok {
			errs = append(errs, fmt.Errorf("metadata.labels: %s is set by the pod builder", key))
		}
	}
	for _, key := range []string{workflow.AnnotationTemplate, workflow.AnnotationScript, workflow.AnnotationOutputs} {
		if _, ok := t.Metadata.Annotations[key]; ok {
			errs = append(errs, fmt.Errorf("metadata.annotations: %s is set by the pod builder", key))
		}
	}
	return errors.Join(errs...)
}

func validateNames(t *workflow.Template) []error {
	var errs []error
	seen := reservedContainerNames()
	for i, s := range t.Sidecars {
		if s.Name == "" || slices.Contains(seen, s.Name) {
			errs = append(errs, fmt.Errorf("sidecars[%d].name: %q is empty, reserved (main, wait, init) or used twice", i, s.Name))
		}
		seen = append(seen, s.Name)
	}
	for i, v := range t.Volumes {
		if slices.Contains(reservedVolumeNames(), v.Name) {
			errs = append(errs, fmt.Errorf("volumes[%d].name: %q is reserved for the pod builder", i, v.Name))
		}
	}
	return errs
}

// validateVolumeMounts checks that every mount of main and of the sidecars
// refers to a volume the template declares.
func validateVolumeMounts(t *workflow.Template) []error {
	declared := make([]string, 0, len(t.Volumes))
	for _, v := range t.Volumes {
		declared = append(declared, v.Name)
	}
	var errs []error
	check := func(who string, c containerMounts) {
		for i, m := range c {
			if !slices.Contains(declared, m.Name) {
				errs = append(errs, fmt.Errorf("%s.volumeMounts[%d]: volume %q is not declared: add it under volumes, e.g. {name: %s, emptyDir: {}}", who, i, m.Name, m.Name))
			}
		}
	}
	check(mainKey(t), mainMounts(t))
	for i, s := range t.Sidecars {
		check(fmt.Sprintf("sidecars[%d]", i), s.VolumeMounts)
	}
	return errs
}

func validateArtifacts(key string, arts []workflow.Artifact) []error {
	var errs []error
	var names []string
	for i, a := range arts {
		switch {
		case a.Name == "" || slices.Contains(names, a.Name):
			errs = append(errs, fmt.Errorf("%s.artifacts[%d].name: %q is empty or used twice", key, i, a.Name))
		case !path.IsAbs(a.Path):
			errs = append(errs, fmt.Errorf("%s.artifacts[%d].path: %q is not an absolute path", key, i, a.Path))
		}
		names = append(names, a.Name)
	}
	return errs
}
