//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// peakRSSLine is what argoexec wait logs last: its own VmHWM.
var peakRSSLine = regexp.MustCompile(`msg="peak memory".* peakRSS=([0-9.]+)MiB`)

// waitPeakRSS returns the peak RSS, in MiB, that wait logged.
func waitPeakRSS(t *testing.T, r *stepResult) float64 {
	t.Helper()
	m := peakRSSLine.FindStringSubmatch(r.waitLog)
	if m == nil {
		t.Fatalf("wait logged no peak memory line; log:\n%s", r.waitLog)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestWaitPeakRSS measures the real argoexec wait inside a real pod, on k8sapi and kubelet:
// main writes N MiB of random data to its /work volume and wait archives it (the /mainctrfs
// mirror, tar.gz at gzip's default level), uploads it to S3 with its SHA-256 checked, and
// reports it. The figure is the VmHWM wait logs at its end. Goal: <= 32 MiB, flat in N.
//
//	hack/e2e.sh -run TestWaitPeakRSS -v
func TestWaitPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 1.3 GiB per backend through S3; not with -short")
	}
	sizes := []int{0, 64, 256, 1024}
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
		t.Run(backend, func(t *testing.T) {
			e := newWfEnv(t, backend)
			peak := map[int]float64{}
			for _, mib := range sizes {
				name := fmt.Sprintf("rss-%d", mib)
				tmpl := e.template(name, fmt.Sprintf("head -c %d /dev/urandom > /work/data.bin", mib<<20))
				tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "data", Path: "/work/data.bin"}}
				if mib == 0 {
					tmpl = e.template(name, "echo 1 > /work/p")
					tmpl.Outputs.Parameters = []wf.Parameter{{Name: "p", ValueFrom: &wf.ValueFrom{Path: "/work/p"}}}
				}
				r := e.run(t, name, tmpl, nil, false)
				if r.pod.Status.Phase != corev1.PodSucceeded {
					t.Fatalf("%s: phase %s", name, r.pod.Status.Phase)
				}
				if mib > 0 && (r.outputs == nil || len(r.outputs.Artifacts) != 1) {
					t.Fatalf("%s: outputs %+v, want one artifact", name, r.outputs)
				}
				peak[mib] = waitPeakRSS(t, r)
				t.Logf("%s: artifact %d MiB: wait's peak RSS %.1f MiB", backend, mib, peak[mib])
			}
			t.Logf("%s: wait's peak RSS in the pod: no artifact %.1f MiB, 64 MiB %.1f, 256 MiB %.1f, 1 GiB %.1f (goal <= 32 MiB, flat)",
				backend, peak[0], peak[64], peak[256], peak[1024])
			if peak[1024] > peak[64]+8 {
				t.Errorf("%s: wait's peak RSS grows with the artifact: %.1f MiB at 64 MiB, %.1f MiB at 1 GiB", backend, peak[64], peak[1024])
			}
		})
	}
}
