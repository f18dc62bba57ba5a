package argo

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestArtifactoryThroughArchiveLocation: under Argo's protocol an output
// with no location goes to the artifactory archiveLocation's URL +
// /NAME.tgz with the basic auth of the secret files the controller mounts,
// and the artifact as reported (the URL's path alone) loads in a
// downstream step whose archiveLocation is on the same server.
func TestArtifactoryThroughArchiveLocation(t *testing.T) {
	var mu sync.Mutex
	files := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if u, p, ok := r.BasicAuth(); !ok || u != "alice" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.Method {
		case http.MethodPut:
			files[r.URL.Path], _ = io.ReadAll(r.Body)
			w.WriteHeader(http.StatusCreated)
		case http.MethodGet:
			b, ok := files[r.URL.Path]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.Write(b)
		}
	}))
	t.Cleanup(srv.Close)
	secrets := t.TempDir()
	for name, v := range map[string]string{"rt/user": "alice", "rt/pass": "s3cret"} {
		if err := os.MkdirAll(filepath.Join(secrets, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(secrets, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	archive := func(pod string) *wf.Template {
		return &wf.Template{ArchiveLocation: &wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: srv.URL + "/generic/wf/" + pod,
			ArtifactoryAuth: wf.ArtifactoryAuth{UsernameSecret: sel("rt", "user"), PasswordSecret: sel("rt", "pass")}}}}
	}
	log := logrus.NewEntry(logrus.New())
	log.Logger.SetOutput(io.Discard)
	p := &Protocol{SecretsDir: secrets}
	locator, store, err := p.artifacts(archive("pod-1"), log)
	if err != nil {
		t.Fatal(err)
	}
	out := wf.Artifact{Name: "out", Path: "/tmp/out.txt", Archive: &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}}
	upload, reported, err := locator.Locate(out, flow.KeyVars{})
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(local, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(context.Background(), local, upload); err != nil {
		t.Fatal(err)
	}
	if got := string(files["/generic/wf/pod-1/out.txt"]); got != "hello" {
		t.Errorf("stored %q at /generic/wf/pod-1/out.txt", got)
	}
	if reported.Artifactory == nil || reported.Artifactory.URL != "/generic/wf/pod-1/out.txt" || reported.Artifactory.UsernameSecret != nil {
		t.Fatalf("reported %+v, want the URL's path alone", reported.Artifactory)
	}
	_, downstream, err := p.artifacts(archive("pod-2"), log)
	if err != nil {
		t.Fatal(err)
	}
	in := wf.Artifact{Name: "in", Path: "/tmp/in.txt"}
	in.SetLocation(reported.Location())
	dest := filepath.Join(t.TempDir(), "in.txt")
	if err := downstream.Load(context.Background(), in, dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "hello" {
		t.Errorf("loaded %q", b)
	}
}
