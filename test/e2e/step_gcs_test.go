//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/emissary"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestStepGCS runs two steps of our own pod builder with a gcs repository, the testbed's GCS
// emulator (STORAGE_EMULATOR_HOST in the ConfigMap's executor.env): produce's output goes to the
// repository at its keyFormat, and consume loads it back by that key as an input.
func TestStepGCS(t *testing.T) {
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet, emissary.ExecutorEmissary} {
		t.Run(backend, func(t *testing.T) {
			e := newWfEnv(t, backend)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := e.f.Env.EnsureGCSBucket(ctx, argoGCSBucket); err != nil {
				t.Fatal(err)
			}
			e.cfg.ArtifactRepository = wf.ArtifactRepository{GCS: &wf.GCSArtifactRepository{
				GCSBucket: wf.GCSBucket{Bucket: argoGCSBucket}, KeyFormat: e.f.Namespace + "/{{pod.name}}/{{artifact.name}}.tgz"}}
			e.cfg.Executor.Env = append(e.cfg.Executor.Env, corev1.EnvVar{Name: wf.EnvStorageEmulatorHost, Value: e.f.Env.GCSHost})

			produce := e.template("produce", "echo hello gcs > /work/out.txt")
			produce.Outputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/work/out.txt"}}
			r := e.run(t, "produce", produce, nil, false)
			if r.pod.Status.Phase != corev1.PodSucceeded || r.outputs == nil || len(r.outputs.Artifacts) != 1 {
				t.Fatalf("produce: phase %s, outputs %+v", r.pod.Status.Phase, r.outputs)
			}
			got := r.outputs.Artifacts[0].GCS
			if want := e.f.Namespace + "/produce/out.tgz"; got == nil || got.Bucket != argoGCSBucket || got.Key != want {
				t.Fatalf("produce reported %+v, want gs://%s/%s", got, argoGCSBucket, want)
			}

			consume := e.template("consume", "cat /in/out.txt")
			consume.Inputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/in/out.txt", GCS: &wf.GCSArtifact{Key: got.Key}}}
			r = e.run(t, "consume", consume, nil, false)
			if r.pod.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("consume: phase %s", r.pod.Status.Phase)
			}
			if log := containerLog(ctx, e, "consume", wf.MainContainerName); log != "hello gcs\n" {
				t.Errorf("consume printed %q, want %q", log, "hello gcs\n")
			}
		})
	}
}
