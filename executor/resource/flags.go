package resource

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// flags are a resource template's flags (kubectl flags in Argo's executor)
// that map onto the Kubernetes API; parseFlags refuses every other one by name.
type flags struct {
	// args are the positional arguments: TYPE NAME..., TYPE/NAME..., or TYPE
	// with a selector (get, delete, and patch with mergeStrategy json).
	args []string
	// namespace is -n/--namespace.
	namespace string
	// selector is -l/--selector (delete).
	selector string
	// validation is the API's fieldValidation from --validate.
	validation string
	// fieldManager is --field-manager.
	fieldManager string
	// forceConflicts is --force-conflicts (apply); nil means the default.
	forceConflicts *bool
	// ignoreNotFound is --ignore-not-found (get, delete).
	ignoreNotFound *bool
	// wait is --wait (delete); nil means the default, true.
	wait *bool
	// propagation is --cascade (delete).
	propagation *metav1.DeletionPropagation
	// gracePeriod is --grace-period (delete); negative values mean the object's default.
	gracePeriod *int64
}

// flagSpec says how one supported flag is spelled and which actions take it.
type flagSpec struct {
	long    string
	short   string
	boolean bool
	actions []string
	set     func(f *flags, v string) error
}

func flagSpecs() []flagSpec {
	all := []string{ActionGet, ActionCreate, ActionApply, ActionDelete, ActionReplace, ActionPatch}
	writes := []string{ActionCreate, ActionApply, ActionReplace, ActionPatch}
	return []flagSpec{
		{long: "namespace", short: "n", actions: all, set: func(f *flags, v string) error { f.namespace = v; return nil }},
		{long: "selector", short: "l", actions: []string{ActionDelete}, set: func(f *flags, v string) error { f.selector = v; return nil }},
		{long: "validate", boolean: true, actions: writes, set: func(f *flags, v string) error {
			switch strings.ToLower(v) {
			case "true", "strict":
				f.validation = metav1.FieldValidationStrict
			case "false", "ignore":
				f.validation = metav1.FieldValidationIgnore
			case "warn":
				f.validation = metav1.FieldValidationWarn
			default:
				return fmt.Errorf("want true, false, strict, warn or ignore")
			}
			return nil
		}},
		{long: "field-manager", actions: writes, set: func(f *flags, v string) error { f.fieldManager = v; return nil }},
		{long: "server-side", boolean: true, actions: []string{ActionApply}, set: func(_ *flags, v string) error {
			if b, err := strconv.ParseBool(v); err != nil || !b {
				return fmt.Errorf("argoexec always applies server-side; remove the flag")
			}
			return nil
		}},
		{long: "force-conflicts", boolean: true, actions: []string{ActionApply}, set: func(f *flags, v string) error {
			b, err := strconv.ParseBool(v)
			f.forceConflicts = &b
			return err
		}},
		{long: "ignore-not-found", boolean: true, actions: []string{ActionGet, ActionDelete}, set: func(f *flags, v string) error {
			b, err := strconv.ParseBool(v)
			f.ignoreNotFound = &b
			return err
		}},
		{long: "wait", boolean: true, actions: []string{ActionDelete}, set: func(f *flags, v string) error {
			b, err := strconv.ParseBool(v)
			f.wait = &b
			return err
		}},
		{long: "cascade", boolean: true, actions: []string{ActionDelete}, set: func(f *flags, v string) error {
			var p metav1.DeletionPropagation
			switch strings.ToLower(v) {
			case "true", "background":
				p = metav1.DeletePropagationBackground
			case "foreground":
				p = metav1.DeletePropagationForeground
			case "false", "orphan":
				p = metav1.DeletePropagationOrphan
			default:
				return fmt.Errorf("want background, foreground or orphan")
			}
			f.propagation = &p
			return nil
		}},
		{long: "grace-period", actions: []string{ActionDelete}, set: func(f *flags, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("want a whole number of seconds")
			}
			if n >= 0 {
				f.gracePeriod = &n
			}
			return nil
		}},
	}
}

// supportedFlagsHelp lists what parseFlags accepts, for its errors.
const supportedFlagsHelp = "-n/--namespace; --validate and --field-manager (create, apply, replace, patch); " +
	"--server-side and --force-conflicts (apply); --ignore-not-found (get, delete); " +
	"-l/--selector, --wait, --cascade and --grace-period (delete); " +
	"TYPE NAME or TYPE/NAME arguments (get, delete, and patch with mergeStrategy json)"

// parseFlags reads a resource template's flags for action. A flag that has
// no meaning through the Kubernetes API, or not for this action, is an error
// naming it and saying what to do; none is ignored.
func parseFlags(action string, in []string) (*flags, error) {
	f := &flags{}
	specs := flagSpecs()
	find := func(name string, short bool) *flagSpec {
		for i := range specs {
			if (short && specs[i].short == name) || (!short && specs[i].long == name) {
				return &specs[i]
			}
		}
		return nil
	}
	for i := 0; i < len(in); i++ {
		a := in[i]
		if a == "" {
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			f.args = append(f.args, a)
			continue
		}
		var spec *flagSpec
		var value string
		hasValue := false
		if name, ok := strings.CutPrefix(a, "--"); ok {
			if n, v, ok := strings.Cut(name, "="); ok {
				name, value, hasValue = n, v, true
			}
			spec = find(name, false)
		} else {
			name := a[1:2]
			rest := a[2:]
			spec = find(name, true)
			if rest != "" {
				value, hasValue = strings.TrimPrefix(rest, "="), true
			}
		}
		if spec == nil {
			return nil, fmt.Errorf("resource template flag %q is not supported: argoexec acts through the Kubernetes API, not kubectl, and supports %s; remove the flag, or run kubectl in a container template", a, supportedFlagsHelp)
		}
		if !slices.Contains(spec.actions, action) {
			return nil, fmt.Errorf("resource template flag %q does not apply to action %s (it applies to %s); remove it", a, action, strings.Join(spec.actions, ", "))
		}
		if !hasValue {
			if spec.boolean {
				value = "true"
			} else {
				if i+1 >= len(in) {
					return nil, fmt.Errorf("resource template flag %q needs a value", a)
				}
				i++
				value = in[i]
			}
		}
		if err := spec.set(f, value); err != nil {
			return nil, fmt.Errorf("resource template flag %q: value %q: %w", a, value, err)
		}
	}
	return f, nil
}
