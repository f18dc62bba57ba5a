package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// DecodeTemplate decodes a template written as JSON or YAML. An unknown or
// duplicate field is an error that names it (e.g. `unknown field
// "container.imagePullPolic"`), so a typo never silently drops a setting.
//
// Every field of Argo v3.3.8's Template is accepted and kept, so any
// template Argo accepts decodes here; activeDeadlineSeconds, an IntOrString
// in Argo, may also be a string holding a whole number.
func DecodeTemplate(data []byte) (*Template, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("decode template: parse YAML: %w", err)
	}
	if js, err = deadlinesAsNumbers(js); err != nil {
		return nil, fmt.Errorf("decode template: %w", err)
	}
	var t Template
	if err := DecodeStrict(js, &t); err != nil {
		return nil, fmt.Errorf("decode template: %w", err)
	}
	return &t, nil
}

// deadlineKey is the template field that Argo types as an IntOrString.
const deadlineKey = "activeDeadlineSeconds"

// deadlinesAsNumbers rewrites every activeDeadlineSeconds written as a
// string holding a whole number ("30", as Argo's controller writes a
// substituted parameter) as that number; any other string is an error that
// names the field and the value. js is returned unchanged when no such
// string is in it.
func deadlinesAsNumbers(js []byte) ([]byte, error) {
	if !bytes.Contains(js, []byte(`"`+deadlineKey+`":"`)) {
		return js, nil
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return js, nil // DecodeStrict reports it with the field's path
	}
	if err := rewriteDeadlines(doc, ""); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

func rewriteDeadlines(v any, path string) error {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := joinPath(path, k)
			if s, ok := v[k].(string); ok && k == deadlineKey {
				n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				if err != nil {
					return fmt.Errorf("%s: %q is not a whole number of seconds (an unresolved parameter?); write a number such as 30", p, s)
				}
				v[k] = n
				continue
			}
			if err := rewriteDeadlines(v[k], p); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := rewriteDeadlines(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// DecodeStrict decodes JSON or YAML into v, case-sensitively, and fails on
// unknown and duplicate fields with errors that name each one by its path.
// pkg/config uses it for the ConfigMap too, so both reject typos alike.
func DecodeStrict(data []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return fmt.Errorf("parse YAML: %w", err)
	}
	strict, err := kjson.UnmarshalStrict(js, v)
	if err != nil {
		return withTopLevelKey(js, v, err)
	}
	return errors.Join(strict...)
}

// withTopLevelKey prefixes err with the top-level key whose value caused it,
// found by decoding each key alone into a fresh value of v's type. Errors
// from custom decoders (a bad resource quantity, say) do not name their
// field otherwise.
func withTopLevelKey(js []byte, v any, err error) error {
	var fields map[string]json.RawMessage
	if reflect.TypeOf(v).Kind() != reflect.Pointer || json.Unmarshal(js, &fields) != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		one, mErr := json.Marshal(map[string]json.RawMessage{key: fields[key]})
		if mErr != nil {
			return err
		}
		fresh := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if _, oneErr := kjson.UnmarshalStrict(one, fresh); oneErr != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return err
}
