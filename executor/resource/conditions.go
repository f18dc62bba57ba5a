package resource

import (
	"fmt"

	"github.com/tidwall/gjson"
	"k8s.io/apimachinery/pkg/labels"
)

// conditions are a resource template's successCondition and
// failureCondition in Argo's syntax: label-selector requirements
// (k8s.io/apimachinery/pkg/labels) whose keys are gjson paths into the
// object, e.g. `status.succeeded > 0` or `status.phase in (Failed, Error)`.
// As in Argo v3.3.8, every success requirement must hold (AND), while any one
// failure requirement fails the step (OR); `>` and `<` compare whole numbers
// (a value that is not one never matches), the other operators compare the
// value as a string.
type conditions struct {
	success, failure labels.Requirements
}

// parseConditions parses both conditions; an empty one has no requirements.
func parseConditions(success, failure string) (*conditions, error) {
	c := &conditions{}
	var err error
	if c.success, err = parseRequirements(success); err != nil {
		return nil, fmt.Errorf("success condition '%s' failed to parse: %w", success, err)
	}
	if c.failure, err = parseRequirements(failure); err != nil {
		return nil, fmt.Errorf("failure condition '%s' failed to parse: %w", failure, err)
	}
	return c, nil
}

func parseRequirements(s string) (labels.Requirements, error) {
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, err
	}
	reqs, _ := sel.Requirements()
	return reqs, nil
}

// none says there is nothing to wait for: Argo returns at once.
func (c *conditions) none() bool { return len(c.success) == 0 && len(c.failure) == 0 }

// gjsonLabels lets label requirements read gjson paths of an object's JSON.
type gjsonLabels []byte

// Has says whether the path exists.
func (g gjsonLabels) Has(path string) bool { return gjson.GetBytes(g, path).Exists() }

// Get returns the path's value as a string (numbers as written, objects as JSON).
func (g gjsonLabels) Get(path string) string { return gjson.GetBytes(g, path).String() }

// Lookup returns the path's value and whether it exists.
func (g gjsonLabels) Lookup(path string) (string, bool) {
	r := gjson.GetBytes(g, path)
	return r.String(), r.Exists()
}

// FailedError is a failure condition that held: the step fails.
type FailedError struct {
	// Requirement is the failure requirement that matched, as Argo prints it.
	Requirement string
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("failure condition '%s' evaluated true", e.Requirement)
}

// evaluate checks the object's JSON: a *FailedError if a failure
// requirement holds, else whether every success requirement holds. It also
// says which success requirements do not hold yet, for the log.
func (c *conditions) evaluate(obj []byte) (done bool, pending []string, err error) {
	ls := gjsonLabels(obj)
	for _, r := range c.failure {
		if r.Matches(ls) {
			return false, nil, &FailedError{Requirement: r.String()}
		}
	}
	for _, r := range c.success {
		if !r.Matches(ls) {
			pending = append(pending, r.String())
		}
	}
	return len(pending) == 0, pending, nil
}
