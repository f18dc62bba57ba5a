//go:build e2e && bench

package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestWaitCPUProfile collects CPU profiles of wait over many small steps (the step of
// TestWaitPeakRSS with no artifact: one output parameter), for `go tool pprof` to merge: one
// step's wait uses about 30 ms of CPU, too little for one profile. It runs only when
// ARGOEXEC_E2E_CPU_PROFILE_DIR names a directory, and needs an executor image built with the
// tag bench (README, EnvCPUProfile in cmd/argoexec/app), the tag this test is built with:
//
//	GOFLAGS=-tags=bench ARGOEXEC_E2E_TAGS=e2e,bench ARGOEXEC_E2E_CPU_PROFILE_DIR=/tmp/prof \
//	  ARGOEXEC_E2E_SKIP_UP=1 hack/e2e.sh -run TestWaitCPUProfile
//	go tool pprof -top /tmp/prof/kubelet-*.pprof
//
// wait logs its profile (ARGOEXEC_CPU_PROFILE=log), the test writes it to the directory.
// ARGOEXEC_E2E_CPU_PROFILE_BACKENDS (default k8sapi,kubelet) picks the backends,
// ARGOEXEC_E2E_CPU_PROFILE_RUNS (default 30) steps per backend and image;
// ARGOEXEC_E2E_BASELINE_IMAGE, when set, is a second image run interleaved with ours (files
// named BACKEND-base-N.pprof). It logs the median cpuOwn of each backend and image from wait's
// `peak memory` line; it asserts only that each step succeeded and left its profile.
// profileField is the profile in wait's "cpu profile" line.
var profileField = regexp.MustCompile(`msg="cpu profile".* pprof=([A-Za-z0-9_-]+)`)

func TestWaitCPUProfile(t *testing.T) {
	dir := os.Getenv("ARGOEXEC_E2E_CPU_PROFILE_DIR")
	if dir == "" {
		t.Skip("ARGOEXEC_E2E_CPU_PROFILE_DIR is not set")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runs := argoEnvInt("ARGOEXEC_E2E_CPU_PROFILE_RUNS", 30)
	backends := []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet}
	if b := os.Getenv("ARGOEXEC_E2E_CPU_PROFILE_BACKENDS"); b != "" {
		backends = strings.Split(b, ",")
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			e := newWfEnv(t, backend)
			e.cfg.Executor.Env = append(e.cfg.Executor.Env, corev1.EnvVar{Name: "ARGOEXEC_CPU_PROFILE", Value: "log"})
			images := map[string]string{"dev": e.cfg.Executor.Image}
			order := []string{"dev"}
			if b := os.Getenv("ARGOEXEC_E2E_BASELINE_IMAGE"); b != "" {
				images["base"] = b
				order = []string{"base", "dev"}
			}
			own := map[string][]float64{}
			for i := range runs {
				for _, label := range order {
					e.cfg.Executor.Image = images[label]
					name := fmt.Sprintf("prof-%s-%d", label, i)
					tmpl := e.template(name, "echo 1 > /work/p")
					tmpl.Outputs.Parameters = []wf.Parameter{{Name: "p", ValueFrom: &wf.ValueFrom{Path: "/work/p"}}}
					r := e.run(t, name, tmpl, nil, false)
					if r.pod.Status.Phase != corev1.PodSucceeded {
						t.Fatalf("%s: phase %s", name, r.pod.Status.Phase)
					}
					u := usageOf(t, "wait", r.waitLog)
					own[label] = append(own[label], u["cpuOwn"])
					m := profileField.FindStringSubmatch(r.waitLog)
					if m == nil {
						t.Fatalf("%s: wait logged no cpu profile (was the image built with -tags bench?)", name)
					}
					b, err := base64.RawURLEncoding.DecodeString(m[1])
					if err != nil {
						t.Fatalf("%s: wait's cpu profile: %v", name, err)
					}
					dst := filepath.Join(dir, fmt.Sprintf("%s-%s-%02d.pprof", backend, label, i))
					if err := os.WriteFile(dst, b, 0o644); err != nil {
						t.Fatal(err)
					}
					// the kubelet backend reads every pod of the node: keep their number as it was
					zero := int64(0)
					if err := e.f.Client.CoreV1().Pods(e.f.Namespace).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, label := range order {
				o := slices.Clone(own[label])
				slices.Sort(o)
				t.Logf("%s, image %s (%s), %d steps: wait cpuOwn median %.1f ms, min %.1f, max %.1f; profiles %s/%s-%s-*.pprof",
					backend, images[label], label, len(o), o[len(o)/2], o[0], o[len(o)-1], dir, backend, label)
			}
		})
	}
}
