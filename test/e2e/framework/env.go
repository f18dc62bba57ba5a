//go:build e2e

// Package framework is the e2e tier's small toolkit: where the testbed's components are (from
// environment variables that hack/e2e.sh sets; defaults match hack/cluster.sh), a per-test
// namespace, pod helpers that wait with watches, and a Docker Engine API client over the unix
// socket (net/http only).
package framework

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Env says where the testbed's components are. Every field has an ARGOEXEC_E2E_* variable.
type Env struct {
	State         string // ARGOEXEC_E2E_STATE: testbed state dir (default /var/lib/argoexec-testbed)
	Kubeconfig    string // ARGOEXEC_E2E_KUBECONFIG: admin kubeconfig (default $STATE/admin.kubeconfig)
	CAFile        string // ARGOEXEC_E2E_CA_FILE: cluster CA, signs the kubelet's serving cert (default $STATE/pki/ca.crt)
	NodeName      string // ARGOEXEC_E2E_NODE_NAME: the node (default: lower-cased hostname)
	KubeletHost   string // ARGOEXEC_E2E_KUBELET_HOST: node IP the kubelet serves on (default 10.88.0.1)
	KubeletPort   int    // ARGOEXEC_E2E_KUBELET_PORT (default 10250)
	DockerSock    string // ARGOEXEC_E2E_DOCKER_SOCK: dockerd socket (default /var/run/docker.sock)
	S3Endpoint    string // ARGOEXEC_E2E_S3_ENDPOINT: versitygw, reachable from pods (default http://10.88.0.1:7070)
	S3AccessKey   string // ARGOEXEC_E2E_S3_ACCESS_KEY
	S3SecretKey   string // ARGOEXEC_E2E_S3_SECRET_KEY
	S3Region      string // ARGOEXEC_E2E_S3_REGION (default us-east-1)
	GCSHost       string // ARGOEXEC_E2E_GCS_HOST: the GCS emulator's host:port, reachable from pods (from $STATE/gcs.env; default 10.88.0.1:7071)
	BusyboxImage  string // ARGOEXEC_E2E_BUSYBOX_IMAGE (default busybox:local)
	ExecutorImage string // ARGOEXEC_E2E_EXECUTOR_IMAGE (default argoexec:dev)
}

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// LoadEnv reads the ARGOEXEC_E2E_* variables. Unset S3 keys are read from $STATE/s3.env, and
// the GCS emulator's address from $STATE/gcs.env, the files hack/cluster.sh writes.
func LoadEnv() Env {
	state := getenv("ARGOEXEC_E2E_STATE", "/var/lib/argoexec-testbed")
	s3 := readEnvFile(filepath.Join(state, "s3.env"))
	for k, v := range readEnvFile(filepath.Join(state, "gcs.env")) {
		s3[k] = v
	}
	host, _ := os.Hostname()
	port, err := strconv.Atoi(getenv("ARGOEXEC_E2E_KUBELET_PORT", "10250"))
	if err != nil {
		port = 10250
	}
	e := Env{
		State:         state,
		Kubeconfig:    getenv("ARGOEXEC_E2E_KUBECONFIG", filepath.Join(state, "admin.kubeconfig")),
		CAFile:        getenv("ARGOEXEC_E2E_CA_FILE", filepath.Join(state, "pki", "ca.crt")),
		NodeName:      getenv("ARGOEXEC_E2E_NODE_NAME", lower(host)),
		KubeletHost:   getenv("ARGOEXEC_E2E_KUBELET_HOST", "10.88.0.1"),
		KubeletPort:   port,
		DockerSock:    getenv("ARGOEXEC_E2E_DOCKER_SOCK", "/var/run/docker.sock"),
		BusyboxImage:  getenv("ARGOEXEC_E2E_BUSYBOX_IMAGE", "busybox:local"),
		ExecutorImage: getenv("ARGOEXEC_E2E_EXECUTOR_IMAGE", "argoexec:dev"),
	}
	for _, kv := range []struct {
		dst *string
		key string
		def string
	}{
		{&e.S3Endpoint, "ARGOEXEC_E2E_S3_ENDPOINT", "http://10.88.0.1:7070"},
		{&e.S3AccessKey, "ARGOEXEC_E2E_S3_ACCESS_KEY", ""},
		{&e.S3SecretKey, "ARGOEXEC_E2E_S3_SECRET_KEY", ""},
		{&e.S3Region, "ARGOEXEC_E2E_S3_REGION", "us-east-1"},
		{&e.GCSHost, "ARGOEXEC_E2E_GCS_HOST", "10.88.0.1:7071"},
	} {
		def := kv.def
		if v := s3[kv.key]; v != "" {
			def = v
		}
		*kv.dst = getenv(kv.key, def)
	}
	return e
}

func lower(s string) string { return strings.ToLower(s) }

// readEnvFile parses KEY=VALUE lines; a missing file is an empty map.
func readEnvFile(path string) map[string]string {
	out := map[string]string{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}
