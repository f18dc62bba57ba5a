package kubelet

import (
	"strings"
	"testing"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// TestCheckConfig feeds the kubelet's keys through the configuration's
// loader, as argoexec-step reads them, one bad value at a time.
func TestCheckConfig(t *testing.T) {
	backends := []config.Backend{Backend().Pod}
	for _, tc := range []struct {
		name, in string
		want     []string // empty: valid
	}{
		{"defaults", "containerRuntimeExecutor: kubelet\n", nil},
		{"CA in the service-account mount", "containerRuntimeExecutor: kubelet\nkubeletCAFile: " + workflow.ServiceAccountCAPath + "\n", nil},
		{"port too big", "containerRuntimeExecutor: kubelet\nkubeletPort: 70000\n", []string{"kubeletPort: 70000 is not a port"}},
		{"negative port", "containerRuntimeExecutor: kubelet\nkubeletPort: -1\n", []string{"kubeletPort: -1 is not a port"}},
		{"relative CA", "containerRuntimeExecutor: kubelet\nkubeletCAFile: ca.crt\n", []string{`kubeletCAFile: "ca.crt" is not an absolute path`}},
		{"insecure and CA", "containerRuntimeExecutor: kubelet\nkubeletInsecure: true\nkubeletCAFile: /ca.crt\n", []string{"kubeletInsecure: true contradicts kubeletCAFile"}},
		{"two bad keys", "containerRuntimeExecutor: kubelet\nkubeletPort: 70000\nsidecarMode: x\n", []string{"kubeletPort: 70000", "sidecarMode: unknown mode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseConfig([]byte(tc.in), backends)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("ParseConfig: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseConfig(%q) succeeded, want %q", tc.in, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestConfigFromEnv reads wait's ARGO_KUBELET_* variables as the pod
// builder and Argo's controller set them.
func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{name: "all set", env: map[string]string{workflow.EnvKubeletHost: "10.0.0.1", workflow.EnvKubeletPort: "10255", workflow.EnvKubeletInsecure: "true", workflow.EnvKubeletCAFile: "/ca.crt"},
			want: Config{Host: "10.0.0.1", Port: 10255, Insecure: true, CAFile: "/ca.crt"}},
		{name: "port unset is the default", env: map[string]string{workflow.EnvKubeletHost: "h"}, want: Config{Host: "h", Port: workflow.DefaultKubeletPort}},
		{name: "Argo's port 0 is the default", env: map[string]string{workflow.EnvKubeletHost: "h", workflow.EnvKubeletPort: "0"}, want: Config{Host: "h", Port: workflow.DefaultKubeletPort}},
		{name: "no host", env: map[string]string{}, wantErr: "the kubelet executor needs ARGO_KUBELET_HOST (the pod builder sets it from status.hostIP)"},
		{name: "port not a number", env: map[string]string{workflow.EnvKubeletHost: "h", workflow.EnvKubeletPort: "http"}, wantErr: `ARGO_KUBELET_PORT="http" is not a port number`},
		{name: "port out of range", env: map[string]string{workflow.EnvKubeletHost: "h", workflow.EnvKubeletPort: "70000"}, wantErr: "ARGO_KUBELET_PORT=70000 is not a port (1-65535)"},
		{name: "insecure not a bool", env: map[string]string{workflow.EnvKubeletHost: "h", workflow.EnvKubeletInsecure: "yes please"}, wantErr: `ARGO_KUBELET_INSECURE="yes please" is not a boolean (want true or false)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ConfigFromEnv = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
