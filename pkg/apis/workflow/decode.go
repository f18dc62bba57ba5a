package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// DecodeTemplate decodes a template written as JSON or YAML. An unknown or
// duplicate field is an error that names it (e.g. `unknown field
// "container.imagePullPolic"`), so a typo never silently drops a setting.
func DecodeTemplate(data []byte) (*Template, error) {
	var t Template
	if err := DecodeStrict(data, &t); err != nil {
		return nil, fmt.Errorf("decode template: %w", err)
	}
	return &t, nil
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
