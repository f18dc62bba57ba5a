package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Parse reads either a whole ConfigMap manifest (either layout, see
// FromConfigMap) or the bare configuration YAML, then applies defaults and
// validates against backends.
func Parse(data []byte, backends []Backend) (*Config, error) {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	switch probe.Kind {
	case "":
		return ParseConfig(data, backends)
	case "ConfigMap":
		var cm corev1.ConfigMap
		if err := workflow.DecodeStrict(data, &cm); err != nil {
			return nil, fmt.Errorf("parse ConfigMap: %w", err)
		}
		return FromConfigMap(&cm, backends)
	default:
		return nil, fmt.Errorf("parse config: kind %s: want a ConfigMap or the bare %q YAML", probe.Kind, ConfigKey)
	}
}

// ParseConfig reads the YAML of the ConfigMap's config key (every key in
// one document), rejecting unknown keys by name, then applies defaults and
// validates against backends. Keys of Argo's configuration that this
// controller does not use are accepted and listed in Config.Ignored.
func ParseConfig(data []byte, backends []Backend) (*Config, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("parse config: parse YAML: %w", err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(js, &keys); err != nil {
		return nil, fmt.Errorf("parse config: want a map of keys, got %s", abbrev(js))
	}
	return fromKeys(keys, backends)
}

// FromConfigMap reads the configuration from a ConfigMap in either layout:
// the legacy single key config holding all keys as one YAML document, or
// Argo's per-key layout, where each data key is one key and its value is
// YAML (`containerRuntimeExecutor: kubelet`, `artifactRepository: |` and a
// YAML map). Both layouts in one ConfigMap, or an unknown data key, is an
// error naming the keys. A ConfigMap without data gives the defaults. The
// configuration is validated against backends.
func FromConfigMap(cm *corev1.ConfigMap, backends []Backend) (*Config, error) {
	where := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	if data, ok := cm.Data[ConfigKey]; ok {
		if others := slices.DeleteFunc(slices.Sorted(maps.Keys(cm.Data)), func(k string) bool { return k == ConfigKey }); len(others) > 0 {
			return nil, fmt.Errorf("%s: key %s and the per-key layout's %s together: put every setting under %s, or drop %s and give each its own key (Argo's layout)",
				where, ConfigKey, strings.Join(others, ", "), ConfigKey, ConfigKey)
		}
		c, err := ParseConfig([]byte(data), backends)
		if err != nil {
			return nil, fmt.Errorf("%s key %s: %w", where, ConfigKey, err)
		}
		return c, nil
	}
	keys := map[string]json.RawMessage{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		js, err := yaml.YAMLToJSONStrict([]byte(cm.Data[k]))
		if err != nil {
			errs = append(errs, fmt.Errorf("key %s: parse its value as YAML: %w", k, err))
			continue
		}
		if string(js) != "null" {
			keys[k] = js
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	c, err := fromKeys(keys, backends)
	if err != nil {
		return nil, fmt.Errorf("%s (per-key layout): %w", where, err)
	}
	return c, nil
}

// fromKeys decodes the top-level keys into a Config: ours strictly, Argo's
// that we do not use into Config.Ignored, any other an error naming it.
func fromKeys(keys map[string]json.RawMessage, backends []Backend) (*Config, error) {
	ours := map[string]json.RawMessage{}
	c := &Config{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		switch {
		case slices.Contains(configKeys(), k):
			ours[k] = keys[k]
		case slices.Contains(ArgoIgnoredKeys(), k):
			c.Ignored = append(c.Ignored, k)
		default:
			errs = append(errs, fmt.Errorf("unknown field %q: neither a key of this controller (%s) nor of Argo v3.3's controller configuration", k, strings.Join(configKeys(), ", ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	js, err := json.Marshal(ours)
	if err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	if err := workflow.DecodeStrict(js, c); err != nil {
		if explained := explainKeys(ours); explained != nil {
			err = explained
		}
		return nil, fmt.Errorf("parse config: %w", err)
	}
	if err := checkExplicitEmpty(ours); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	c.SetDefaults()
	if err := c.Validate(backends); err != nil {
		return nil, fmt.Errorf("validate config: %w", err)
	}
	return c, nil
}

// explainKeys explains, key by key, the values of the wrong kind in keys
// (explainKey); nil when it finds none.
func explainKeys(keys map[string]json.RawMessage) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if f, ok := jsonField(reflect.TypeFor[Config](), k); ok {
			if err := explainKey(k, keys[k], f.Type); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// checkExplicitEmpty refuses executor.image set to "": SetDefaults would
// silently replace it with DefaultExecutorImage, which is what leaving the
// key out means.
func checkExplicitEmpty(keys map[string]json.RawMessage) error {
	var exec map[string]json.RawMessage
	if js, ok := keys["executor"]; !ok || json.Unmarshal(js, &exec) != nil {
		return nil
	}
	if img, ok := exec["image"]; ok && (string(img) == `""` || string(img) == "null") {
		return fmt.Errorf("executor.image: empty: name the argoexec image (such as %s), or leave the key out for that default", DefaultExecutorImage)
	}
	return nil
}

// configKeys are the top-level keys of Config, by their JSON names.
func configKeys() []string {
	var keys []string
	for f := range reflect.TypeFor[Config]().Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "-" && name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

func abbrev(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

// LoadFile reads the configuration from a file holding a ConfigMap
// manifest or the bare configuration YAML, validated against backends.
func LoadFile(path string, backends []Backend) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	c, err := Parse(data, backends)
	if err != nil {
		return nil, fmt.Errorf("load config from %s: %w", path, err)
	}
	return c, nil
}
