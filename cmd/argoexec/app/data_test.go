package app

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"

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
