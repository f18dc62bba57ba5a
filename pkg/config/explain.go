package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// explainKey says, in the ConfigMap's terms, why the value js of top-level
// key cannot be decoded into field (its type in Config): the path of the
// bad value, what was given and what is wanted, e.g. `kubeletPort: "10250"
// is a string; want a whole number: write kubeletPort: 10250, without
// quotes`. It returns nil when it finds no value of the wrong kind (the
// decoder's own error then stands).
func explainKey(key string, js json.RawMessage, field reflect.Type) error {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return nil
	}
	path, given, ok := findMismatch(key, doc, field)
	if !ok {
		return nil
	}
	t := findType(field, path, key)
	what := describeGiven(given)
	if t == reflect.TypeFor[resource.Quantity]() {
		b, _ := json.Marshal(given)
		what = string(b) + " is not a quantity"
	}
	return fmt.Errorf("%s: %s; want %s", path, what, want(given, path, t))
}

// findMismatch walks the decoded JSON v alongside Go type t and returns the
// path (key.sub[2].leaf) and value of the first value whose JSON kind t
// cannot take.
func findMismatch(path string, v any, t reflect.Type) (string, any, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[resource.Quantity]() {
		if q, ok := v.(string); ok {
			if _, err := resource.ParseQuantity(q); err == nil {
				return "", nil, false
			}
		} else if _, ok := v.(json.Number); ok {
			return "", nil, false
		}
		return path, v, true
	}
	if v == nil || isCustom(t) {
		return "", nil, false
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return path, v, true
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if f, ok := jsonField(t, name); ok {
				if p, g, bad := findMismatch(path+"."+name, m[name], f.Type); bad {
					return p, g, true
				}
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return path, v, true
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if p, g, bad := findMismatch(path+"."+name, m[name], t.Elem()); bad {
				return p, g, true
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok {
				return path, v, true
			}
			return "", nil, false
		}
		l, ok := v.([]any)
		if !ok {
			return path, v, true
		}
		for i, sub := range l {
			if p, g, bad := findMismatch(fmt.Sprintf("%s[%d]", path, i), sub, t.Elem()); bad {
				return p, g, true
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return path, v, true
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return path, v, true
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return path, v, true
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return path, v, true
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return path, v, true
		}
	}
	return "", nil, false
}

// isCustom says whether t decodes itself (an int-or-string, a time): its
// own error names the problem.
func isCustom(t reflect.Type) bool {
	return t == reflect.TypeFor[intstr.IntOrString]() || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]())
}

// jsonField finds the field of struct t that JSON name decodes into,
// looking into inlined (embedded) structs.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == name:
			return f, true
		case f.Anonymous && tag == "":
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if sub, ok := jsonField(ft, name); ok {
					return sub, true
				}
			}
		}
	}
	return reflect.StructField{}, false
}

// findType is the Go type at path (as findMismatch writes it) under t,
// whose root is named root.
func findType(t reflect.Type, path, root string) reflect.Type {
	rest := strings.TrimPrefix(path, root)
	for rest != "" {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case strings.HasPrefix(rest, "["):
			end := strings.Index(rest, "]")
			t, rest = t.Elem(), rest[end+1:]
		case strings.HasPrefix(rest, "."):
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			name := rest[:end]
			rest = rest[end:]
			if t.Kind() == reflect.Map {
				t = t.Elem()
				continue
			}
			f, _ := jsonField(t, name)
			t = f.Type
		default:
			return t
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// describeGiven names a decoded JSON value and its kind: `"10250" (a
// string)`, `[1] (a list)`.
func describeGiven(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	switch v.(type) {
	case string:
		return s + " is a string"
	case bool:
		return s + " is a boolean"
	case json.Number:
		return s + " is a number"
	case []any:
		return s + " is a list"
	case map[string]any:
		return s + " is a map"
	}
	return s + " is not valid here"
}

// want says what type t takes, in YAML terms, with a hint when the given
// value is the right thing in quotes.
func want(given any, path string, t reflect.Type) string {
	leaf := path[strings.LastIndexAny(path, ".")+1:]
	s, quoted := given.(string)
	if t == reflect.TypeFor[resource.Quantity]() {
		return "a quantity, such as 500m, 2 or 128Mi"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, err := strconv.Atoi(strings.TrimSpace(s)); quoted && err == nil {
			return fmt.Sprintf("a whole number: write %s: %s, without quotes", leaf, strings.TrimSpace(s))
		}
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		if b, err := strconv.ParseBool(s); quoted && err == nil {
			return fmt.Sprintf("true or false: write %s: %v, without quotes", leaf, b)
		}
		return "true or false"
	case reflect.String:
		return "a string (quote it if YAML reads it as something else)"
	case reflect.Slice, reflect.Array:
		return "a list (items each on a line starting with -)"
	case reflect.Struct, reflect.Map:
		return "a map of keys"
	}
	return "a value of type " + t.String()
}
