package config

import (
	"errors"
	"strings"
	"testing"
)

// fakeBackend is a backend with a name and a check given by the test.
type fakeBackend struct {
	name  string
	check func(c *Config) []error
}

func (f fakeBackend) Name() string { return f.name }

func (f fakeBackend) CheckConfig(c *Config) []error {
	if f.check == nil {
		return nil
	}
	return f.check(c)
}

// testBackends are three backends named as the real ones, whose checks
// find nothing: the real checks are tested in each backend's package.
func testBackends() []Backend {
	return []Backend{fakeBackend{name: "kubelet"}, fakeBackend{name: "docker"}, fakeBackend{name: "k8sapi"}}
}

// TestBackendChecksJoined checks that every registered backend's check runs,
// whichever backend is the default, and that its errors join the others.
func TestBackendChecksJoined(t *testing.T) {
	var ran []string
	check := func(name string) func(*Config) []error {
		return func(c *Config) []error {
			ran = append(ran, name)
			if name == "b" {
				return []error{errors.New("bPort: 70000 is not a port")}
			}
			return nil
		}
	}
	backends := []Backend{fakeBackend{"a", check("a")}, fakeBackend{"b", check("b")}}
	_, err := ParseConfig([]byte("containerRuntimeExecutor: a\nsidecarMode: x\n"), backends)
	if err == nil || !strings.Contains(err.Error(), "bPort: 70000 is not a port") || !strings.Contains(err.Error(), "sidecarMode: unknown mode") {
		t.Fatalf("err = %v, want b's problem and sidecarMode's", err)
	}
	if strings.Join(ran, ",") != "a,b" {
		t.Errorf("checks ran: %v, want a,b", ran)
	}
	if _, err := ParseConfig([]byte("containerRuntimeExecutor: c\n"), backends); err == nil || !strings.Contains(err.Error(), `unknown executor "c" (want a or b)`) {
		t.Errorf("err = %v, want one naming the registered backends", err)
	}
}
