package config

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Parse reads either a whole ConfigMap manifest (its data.config key) or
// the bare configuration YAML, then applies defaults and validates.
func Parse(data []byte) (*Config, error) {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	switch probe.Kind {
	case "":
		return ParseConfig(data)
	case "ConfigMap":
		var cm corev1.ConfigMap
		if err := workflow.DecodeStrict(data, &cm); err != nil {
			return nil, fmt.Errorf("parse ConfigMap: %w", err)
		}
		return FromConfigMap(&cm)
	default:
		return nil, fmt.Errorf("parse config: kind %s: want a ConfigMap or the bare %q YAML", probe.Kind, ConfigKey)
	}
}

// ParseConfig reads the YAML of the ConfigMap's config key, rejecting
// unknown keys by name, then applies defaults and validates.
func ParseConfig(data []byte) (*Config, error) {
	c := &Config{}
	if err := workflow.DecodeStrict(data, c); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("validate config: %w", err)
	}
	return c, nil
}

// FromConfigMap reads the configuration from a ConfigMap's config key; a
// ConfigMap without that key gives the defaults.
func FromConfigMap(cm *corev1.ConfigMap) (*Config, error) {
	data, ok := cm.Data[ConfigKey]
	if !ok {
		return Default(), nil
	}
	c, err := ParseConfig([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, ConfigKey, err)
	}
	return c, nil
}

// LoadFile reads the configuration from a file holding a ConfigMap
// manifest or the bare configuration YAML.
func LoadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load config from %s: %w", path, err)
	}
	return c, nil
}

// Load reads the configuration from the live ConfigMap namespace/name.
func Load(ctx context.Context, client kubernetes.Interface, namespace, name string) (*Config, error) {
	cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("load config: get ConfigMap %s/%s: %w", namespace, name, err)
	}
	return FromConfigMap(cm)
}
