package docker

import (
	"strings"
	"testing"

	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

func TestCheckConfig(t *testing.T) {
	backends := []config.Backend{Backend().Pod}
	if _, err := config.ParseConfig([]byte("containerRuntimeExecutor: docker\ndockerSockPath: /run/docker.sock\n"), backends); err != nil {
		t.Errorf("absolute socket: %v", err)
	}
	_, err := config.ParseConfig([]byte("containerRuntimeExecutor: docker\ndockerSockPath: docker.sock\n"), backends)
	if err == nil || !strings.Contains(err.Error(), `dockerSockPath: "docker.sock" is not an absolute path`) {
		t.Errorf("relative socket: err = %v", err)
	}
}

// TestFromEnv checks that wait finds the socket the pod builder mounted,
// and the default one when the variable is unset (Argo's controller sets
// none).
func TestFromEnv(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"/run/docker.sock", "/run/docker.sock"},
		{"", workflow.DefaultDockerSockPath},
	} {
		construct, err := Backend().FromEnv(backend.Env{
			Getenv:    func(k string) string { return map[string]string{workflow.EnvDockerSockPath: tc.env}[k] },
			Namespace: "ns", PodName: "pod", PodUID: "uid",
		})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := construct(nil, testLog())
		if err != nil {
			t.Fatal(err)
		}
		e := rt.(*Executor)
		if e.cfg.SockPath != tc.want || e.cfg.PodUID != "uid" {
			t.Errorf("env %q: config %+v, want socket %s and the pod's UID", tc.env, e.cfg, tc.want)
		}
		e.Close()
	}
}
