//go:build e2e

package framework

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// EnsureGCSBucket creates bucket in the testbed's GCS emulator (Env.GCSHost) unless it exists.
func (e Env) EnsureGCSBucket(ctx context.Context, bucket string) error {
	u := "http://" + e.GCSHost + "/storage/v1/b?project=argoexec-e2e"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(fmt.Sprintf(`{"name":%q}`, bucket)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GCS emulator at %s (hack/cluster.sh up gcs): %w", e.GCSHost, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GCS emulator at %s: create bucket %s: %s: %s", e.GCSHost, bucket, resp.Status, b)
	}
	return nil
}

// fetchGCSArtifact reads an object of the GCS emulator as fetchArtifact reads one of S3: a .tgz's
// files, another object as "", or a directory's objects (no object at the key, objects under
// KEY/) as "dir:PATH". It loads through pkg/artifacts' gcs driver, itself tested against the
// emulator, which Argo's image and ours both wrote to.
func (a *Argo) fetchGCSArtifact(ctx context.Context, bucket, key string) (map[string]string, error) {
	d := artifacts.NewGCS(artifacts.GCSConfig{Endpoints: artifacts.GCSEndpoints{EmulatorHost: a.Env.GCSHost}}, logrus.NewEntry(logrus.New()))
	tmp, err := os.MkdirTemp("", "e2e-gcs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dest := filepath.Join(tmp, "artifact")
	if err := d.Load(ctx, wf.Artifact{Name: key, GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: bucket}, Key: key}}, dest); err != nil {
		return nil, err
	}
	st, err := os.Stat(dest)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		data, err := os.ReadFile(dest)
		if err != nil {
			return nil, err
		}
		return archiveFiles(data)
	}
	files := map[string]string{}
	err = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		files["dir:"+filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files, err
}
