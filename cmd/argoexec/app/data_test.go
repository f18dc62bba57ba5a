package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor/data"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

func TestDataOptions(t *testing.T) {
	tmpl := `{"name":"list-log-files","inputs":{},"outputs":{},"metadata":{},"archiveLocation":{"s3":{"endpoint":"s3.local:7070","bucket":"argo","accessKeySecret":{"name":"s3","key":"a"},"secretKeySecret":{"name":"s3","key":"s"},"key":"wf/pod"}},"data":{"source":{"artifactPaths":{"name":"test-bucket","s3":{"bucket":"my-bucket"}}},"transformation":[{"expression":"filter(data, {# endsWith \"main.log\"})"}]}}`
	env := with(argoResourceEnv(), wf.EnvArgoTemplate, tmpl, wf.EnvArgoIncludeScriptOutput, "true")
	nsFile := t.TempDir() + "/namespace"
	if err := os.WriteFile(nsFile, []byte("argo"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got *DataOptions
	// Argo's controller passes the data field as JSON; it is ignored.
	args := []string{"data", `{"source":{"artifactPaths":{"name":"test-bucket","s3":{"bucket":"my-bucket"}}},"transformation":[]}`}
	err := run(context.Background(), args, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(env), NamespaceFile: nsFile}, runners{
		data: func(_ context.Context, o *DataOptions) error { got = o; return nil },
	})
	if err != nil || got == nil {
		t.Fatalf("run: %v (ran %v)", err, got != nil)
	}
	tp, err := got.Protocol.Template(got.TemplatePath)
	if err != nil || tp.Data == nil || len(tp.Data.Transformation) != 1 {
		t.Fatalf("template = %+v, %v; want the data template from ARGO_TEMPLATE", tp, err)
	}
	parts, err := got.Protocol.Main(got.request(tp, &rest.Config{Host: "https://127.0.0.1:1"}, logrus.NewEntry(logrus.New())))
	repo := parts.DataRepository
	if err != nil || repo == nil || repo.S3 == nil || repo.S3.Bucket != "argo" || repo.S3.Endpoint != "s3.local:7070" {
		t.Fatalf("repository = %+v, %v; want the archiveLocation's", repo, err)
	}
	if parts.DataEnv == nil {
		t.Fatal("no DataEnv")
	}
	for _, kind := range []string{wf.KindS3, wf.KindGCS, wf.KindOSS} {
		if sf, ok := parts.DataEnv(kind).Credentials.(artifacts.SecretFiles); !ok || sf.Root != wf.ArgoSecretsPath {
			t.Errorf("%s credentials = %#v, want the secret files Argo mounts", kind, parts.DataEnv(kind).Credentials)
		}
	}

	err = run(context.Background(), []string{"data"}, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(with(env, wf.EnvPodName, "<unset>")), NamespaceFile: nsFile}, runners{
		data: func(context.Context, *DataOptions) error { t.Fatal("data ran"); return nil },
	})
	if err == nil || !strings.Contains(err.Error(), "argoexec data must run inside a workflow pod") {
		t.Errorf("err = %v", err)
	}
}

// recordReporter keeps the outputs a data template reports.
type recordReporter struct{ outputs *wf.NodeOutputs }

func (r *recordReporter) Report(_ context.Context, o *wf.NodeOutputs) error {
	r.outputs = o
	return nil
}

// TestDataListsGCS: `argoexec data` under Argo's controller, with a gcs
// source given by a key alone, relocated onto the template's
// archiveLocation.gcs, listed through the artifact seam against an
// httptest GCS JSON API (STORAGE_EMULATOR_HOST) that pages two names at a
// time, filtered by the transformation, as runData wires it.
func TestDataListsGCS(t *testing.T) {
	names := []string{"logs/a/main.log", "logs/a/out.tgz", "logs/b/main.log", "logs/c/main.log", "other/main.log"}
	var pages int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/storage/v1/b/argo-gcs/o" {
			http.Error(w, `{"error":{"message":"no such bucket"}}`, http.StatusNotFound)
			return
		}
		pages++
		start, _ := strconv.Atoi(r.URL.Query().Get("pageToken"))
		var under []string
		for _, n := range names {
			if strings.HasPrefix(n, r.URL.Query().Get("prefix")) {
				under = append(under, n)
			}
		}
		page := map[string]any{}
		var items []map[string]string
		for i := start; i < len(under) && i < start+2; i++ {
			items = append(items, map[string]string{"name": under[i]})
		}
		page["items"] = items
		if start+2 < len(under) {
			page["nextPageToken"] = strconv.Itoa(start + 2)
		}
		_ = json.NewEncoder(w).Encode(page)
	}))
	defer srv.Close()
	tmpl := `{"name":"list-log-files","inputs":{},"outputs":{},"metadata":{},"archiveLocation":{"gcs":{"bucket":"argo-gcs","key":"wf/pod"}},"data":{"source":{"artifactPaths":{"name":"logs","gcs":{"key":"logs/"}}},"transformation":[{"expression":"filter(data, {# endsWith \"main.log\"})"}]}}`
	env := with(argoResourceEnv(), wf.EnvArgoTemplate, tmpl, wf.EnvStorageEmulatorHost, strings.TrimPrefix(srv.URL, "http://"))
	nsFile := t.TempDir() + "/namespace"
	if err := os.WriteFile(nsFile, []byte("argo"), 0o600); err != nil {
		t.Fatal(err)
	}
	var o *DataOptions
	err := run(context.Background(), []string{"data"}, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(env), NamespaceFile: nsFile}, runners{
		data: func(_ context.Context, got *DataOptions) error { o = got; return nil },
	})
	if err != nil || o == nil {
		t.Fatalf("run: %v", err)
	}
	tp, err := o.Protocol.Template(o.TemplatePath)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := o.Protocol.Main(o.request(tp, &rest.Config{Host: "https://127.0.0.1:1"}, logrus.NewEntry(logrus.New())))
	if err != nil {
		t.Fatal(err)
	}
	rep := &recordReporter{}
	d := &data.Executor{Template: tp, Repository: parts.DataRepository, Lister: data.KindLister{Env: parts.DataEnv, Allow: parts.DataAllow}, Reporter: rep, Log: logrus.NewEntry(logrus.New())}
	if err := d.Run(context.Background()); err != nil {
		t.Fatalf("data: %v", err)
	}
	if rep.outputs == nil || rep.outputs.Result == nil || *rep.outputs.Result != `["logs/a/main.log","logs/b/main.log","logs/c/main.log"]` {
		t.Errorf("outputs = %+v, want the main.log names under logs/ as the result", rep.outputs)
	}
	if pages != 2 {
		t.Errorf("%d list requests, want 2 (four names under logs/, two a page)", pages)
	}
}
