package workflow

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// DefaultKeyFormat is the object key of an output artifact in the S3
// repository when the ConfigMap sets no keyFormat.
const DefaultKeyFormat = "{{workflow.name}}/{{pod.name}}/{{artifact.name}}.tgz"

// Variables a keyFormat may refer to.
const (
	// KeyVarWorkflowName is the workflow's name.
	KeyVarWorkflowName = "workflow.name"
	// KeyVarPodName is the pod's name.
	KeyVarPodName = "pod.name"
	// KeyVarPodNamespace is the pod's namespace.
	KeyVarPodNamespace = "pod.namespace"
	// KeyVarTemplateName is the template's name.
	KeyVarTemplateName = "template.name"
	// KeyVarArtifactName is the output artifact's name.
	KeyVarArtifactName = "artifact.name"
)

// KeyFormatVariables lists every variable a keyFormat may refer to.
func KeyFormatVariables() []string {
	return []string{KeyVarWorkflowName, KeyVarPodName, KeyVarPodNamespace, KeyVarTemplateName, KeyVarArtifactName}
}

func keyFormatRef() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*([^{}\s]*)\s*\}\}`) }

// UnknownKeyFormatVariables returns the {{...}} references in format that
// are not in KeyFormatVariables, for the ConfigMap's validation.
func UnknownKeyFormatVariables(format string) []string {
	var unknown []string
	for _, m := range keyFormatRef().FindAllStringSubmatch(format, -1) {
		if !slices.Contains(KeyFormatVariables(), m[1]) && !slices.Contains(unknown, m[1]) {
			unknown = append(unknown, m[1])
		}
	}
	return unknown
}

// ExpandKeyFormat fills format's {{...}} references from vars (keyed by
// the KeyVar* names); a reference with no value is an error naming it.
func ExpandKeyFormat(format string, vars map[string]string) (string, error) {
	var missing []string
	out := keyFormatRef().ReplaceAllStringFunc(format, func(ref string) string {
		name := keyFormatRef().FindStringSubmatch(ref)[1]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("expand key format %q: no value for %s", format, strings.Join(missing, ", "))
	}
	return out, nil
}
