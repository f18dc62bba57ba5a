package data

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

type fakeLister struct {
	keys []string
	err  error
	got  []wf.Artifact
}

func (f *fakeLister) List(_ context.Context, art wf.Artifact) ([]string, error) {
	f.got = append(f.got, art)
	if k := art.Location().Kind(); k != wf.KindS3 && k != wf.KindGCS {
		return nil, errors.New("fake lister: " + k)
	}
	return f.keys, f.err
}

type captureReporter struct{ outputs []*wf.NodeOutputs }

func (c *captureReporter) Report(_ context.Context, o *wf.NodeOutputs) error {
	c.outputs = append(c.outputs, o)
	return nil
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// dataTransformations is Argo's examples/data-transformations.yaml list-log-files template.
func dataTransformations() *wf.Template {
	return &wf.Template{
		Name: "list-log-files",
		Data: &wf.DataTemplate{
			Source:         wf.DataSource{ArtifactPaths: &wf.ArtifactPaths{Artifact: wf.Artifact{Name: "test-bucket", S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Bucket: "my-bucket"}}}}},
			Transformation: []wf.TransformationStep{{Expression: `filter(data, {# endsWith "main.log"})`}},
		},
		Outputs: wf.Outputs{Artifacts: []wf.Artifact{{Name: "file", Path: "/file"}}},
	}
}

func TestExecutor(t *testing.T) {
	repo := &wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3.local:9000", Bucket: "argo-artifacts"}, Key: "wf/pod"}}
	for _, tc := range []struct {
		name       string
		tmpl       func() *wf.Template
		keys       []string
		listErr    error
		repo       *wf.ArtifactLocation
		wantResult string
		wantBucket string
		wantKey    string
		wantErr    string
	}{
		{name: "filter", tmpl: dataTransformations, keys: []string{"wf-1/pod-1/main.log", "wf-1/pod-1/out.tgz", "wf-2/pod-2/main.log"}, repo: repo,
			wantResult: `["wf-1/pod-1/main.log","wf-2/pod-2/main.log"]`, wantBucket: "argo-artifacts"},
		{name: "nothing listed", tmpl: dataTransformations, repo: repo, wantResult: `[]`, wantBucket: "argo-artifacts"},
		{name: "map and len", tmpl: func() *wf.Template {
			t := dataTransformations()
			t.Data.Transformation = append(t.Data.Transformation, wf.TransformationStep{Expression: `map(data, {upper(#)})`}, wf.TransformationStep{Expression: `len(data)`})
			t.Data.Source.ArtifactPaths.S3 = &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "other:9000", Bucket: "b"}, Key: "logs"}
			return t
		}, keys: []string{"logs/a/main.log", "logs/b/main.log"}, wantResult: `2`, wantBucket: "b"},
		{name: "no transformation", tmpl: func() *wf.Template {
			t := dataTransformations()
			t.Data.Transformation = nil
			return t
		}, keys: []string{"k"}, repo: repo, wantResult: `["k"]`, wantBucket: "argo-artifacts"},
		{name: "bad expression", tmpl: func() *wf.Template {
			t := dataTransformations()
			t.Data.Transformation = []wf.TransformationStep{{Expression: `filter(data,`}}
			return t
		}, repo: repo, wantErr: "data template: error processing data step 0 (filter(data,)"},
		{name: "no repository", tmpl: dataTransformations, wantErr: `source.artifactPaths "test-bucket": template artifact location not set`},
		{name: "git source", tmpl: func() *wf.Template {
			t := dataTransformations()
			t.Data.Source.ArtifactPaths.S3 = nil
			t.Data.Source.ArtifactPaths.Git = &wf.GitArtifact{Repo: "https://example.com/r.git"}
			return t
		}, repo: repo, wantErr: `fake lister: git`},
		{name: "a key alone is relocated onto the repository", tmpl: func() *wf.Template {
			t := dataTransformations()
			t.Data.Source.ArtifactPaths.S3 = &wf.S3Artifact{Key: "logs"}
			return t
		}, keys: []string{"logs/main.log"}, repo: repo, wantResult: `["logs/main.log"]`, wantBucket: "argo-artifacts", wantKey: "logs"},
		{name: "a gcs key alone onto a gcs repository", tmpl: func() *wf.Template {
			t := dataTransformations()
			t.Data.Source.ArtifactPaths.S3 = nil
			t.Data.Source.ArtifactPaths.GCS = &wf.GCSArtifact{Key: "logs"}
			return t
		}, keys: []string{"logs/main.log"}, repo: &wf.ArtifactLocation{GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "g"}}}, wantResult: `["logs/main.log"]`, wantBucket: "g", wantKey: "logs"},
		{name: "no source", tmpl: func() *wf.Template {
			t := dataTransformations()
			t.Data.Source.ArtifactPaths = nil
			return t
		}, wantErr: "no valid source is used for data template: set source.artifactPaths"},
		{name: "list fails", tmpl: dataTransformations, repo: repo, listErr: errors.New("s3: credentials refused"), wantErr: "data template: unable to source artifact paths: s3: credentials refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lister, rep := &fakeLister{keys: tc.keys, err: tc.listErr}, &captureReporter{}
			d := &Executor{Template: tc.tmpl(), Repository: tc.repo, Lister: lister, Reporter: rep, Log: quietLog()}
			err := d.Run(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run = %v, want %q", err, tc.wantErr)
				}
				if len(rep.outputs) != 0 {
					t.Errorf("reported despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.outputs) != 1 || rep.outputs[0].Result == nil || *rep.outputs[0].Result != tc.wantResult {
				t.Fatalf("reported %+v, want result %s", rep.outputs, tc.wantResult)
			}
			got := lister.got[0].Location()
			var bucket, key string
			switch {
			case got.S3 != nil:
				bucket, key = got.S3.Bucket, got.S3.Key
			case got.GCS != nil:
				bucket, key = got.GCS.Bucket, got.GCS.Key
			}
			if bucket != tc.wantBucket || (tc.wantKey != "" && key != tc.wantKey) {
				t.Errorf("listed bucket %q key %q, want %q %q", bucket, key, tc.wantBucket, tc.wantKey)
			}
			if a := rep.outputs[0].Artifacts; len(a) != 1 || a[0].Name != "file" {
				t.Errorf("declared artifacts not echoed as Argo reports them: %+v", a)
			}
		})
	}
}

// listServer answers S3 ListObjectsV2 for bucket bkt from keys.
func listServer(t *testing.T, keys []string) (endpoint string, prefixes *[]string) {
	t.Helper()
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bkt" && r.URL.Path != "/bkt/" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		prefix := r.URL.Query().Get("prefix")
		seen = append(seen, prefix)
		type content struct {
			Key  string `xml:"Key"`
			Size int    `xml:"Size"`
		}
		res := struct {
			XMLName     xml.Name  `xml:"ListBucketResult"`
			Name        string    `xml:"Name"`
			Prefix      string    `xml:"Prefix"`
			KeyCount    int       `xml:"KeyCount"`
			MaxKeys     int       `xml:"MaxKeys"`
			IsTruncated bool      `xml:"IsTruncated"`
			Contents    []content `xml:"Contents"`
		}{Name: "bkt", Prefix: prefix, MaxKeys: 1000}
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				res.Contents = append(res.Contents, content{Key: k, Size: 1})
			}
		}
		res.KeyCount = len(res.Contents)
		w.Header().Set("Content-Type", "application/xml")
		_ = xml.NewEncoder(w).Encode(res)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &seen
}

func TestS3List(t *testing.T) {
	endpoint, prefixes := listServer(t, []string{"logs/", "logs/a/main.log", "logs/b/main.log", "logsx/c", "top"})
	insecure := true
	s3, err := artifacts.NewS3(artifacts.S3Config{Credentials: artifacts.StaticKeys{AccessKey: "a", SecretKey: "s"}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	art := func(key string) wf.Artifact {
		return wf.Artifact{Name: "src", S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: endpoint, Bucket: "bkt", Region: "us-east-1", Insecure: &insecure}, Key: key}}
	}
	got, err := s3.List(context.Background(), art("logs"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "logs/a/main.log,logs/b/main.log" || (*prefixes)[0] != "logs/" {
		t.Errorf("List(logs) = %q with prefix %q, want the keys under logs/ without the directory object", got, (*prefixes)[0])
	}
	got, err = s3.List(context.Background(), art(""))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("List(\"\") = %q, want the whole bucket but the directory object", got)
	}
}

// gcsListServer answers GCS JSON API objects.list for bucket g from names,
// two a page (nextPageToken is the next index), and returns its host:port
// as STORAGE_EMULATOR_HOST takes it.
func gcsListServer(t *testing.T, names []string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/storage/v1/b/g/o" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		start := 0
		if tok := r.URL.Query().Get("pageToken"); tok != "" {
			start, _ = strconv.Atoi(tok)
		}
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
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestKindLister: a source is listed by the driver of its kind, built from
// the protocol's environment through artifacts.Kinds; a store whose driver
// cannot list is refused naming it and the stores that can (gcs pages;
// oss goes through the S3-compatible API), and the s3
// bucket policy applies as in the flows' store.
func TestKindLister(t *testing.T) {
	endpoint, _ := listServer(t, []string{"logs/a/main.log", "logs/b/out.tgz"})
	insecure := true
	def := wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: endpoint, Bucket: "bkt", Region: "us-east-1", Insecure: &insecure}}}
	gcs := gcsListServer(t, []string{"logs/a/main.log", "logs/b/main.log", "logs/c/out.tgz"})
	env := func(string) artifacts.Env {
		return artifacts.Env{Default: def, Credentials: artifacts.StaticKeys{AccessKey: "a", SecretKey: "s"}, Log: quietLog(), GCS: artifacts.GCSEndpoints{EmulatorHost: gcs}}
	}
	for _, tc := range []struct {
		name    string
		art     wf.Artifact
		allow   artifacts.BucketPolicy
		want    []string
		wantErr string
	}{
		{name: "s3, filled from the default", art: wf.Artifact{Name: "src", S3: &wf.S3Artifact{Key: "logs"}}, want: []string{"logs/a/main.log", "logs/b/out.tgz"}},
		{name: "s3, refused by the bucket policy", art: wf.Artifact{Name: "src", S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "elsewhere:1", Bucket: "x"}, Key: "logs"}},
			allow: artifacts.RepositoryOnly(def.S3.S3Bucket), wantErr: "is not in the artifact repository"},
		{name: "gcs, over two pages", art: wf.Artifact{Name: "src", GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "g"}, Key: "logs"}}, want: []string{"logs/a/main.log", "logs/b/main.log", "logs/c/out.tgz"}},
		{name: "oss, through the S3-compatible API", art: wf.Artifact{Name: "src", OSS: &wf.OSSArtifact{OSSBucket: wf.OSSBucket{Endpoint: "http://" + endpoint, Bucket: "bkt"}, Key: "logs"}}, want: []string{"logs/a/main.log", "logs/b/out.tgz"}},
		{name: "artifactory", art: wf.Artifact{Name: "src", Artifactory: &wf.ArtifactoryArtifact{URL: "http://rt/x"}}, wantErr: `source.artifactPaths "src": listing its artifactory location is not supported: argoexec lists s3, oss, gcs sources (Argo v3.3.8 lists s3, gcs and oss)`},
		{name: "git", art: wf.Artifact{Name: "src", Git: &wf.GitArtifact{Repo: "r"}}, wantErr: "listing its git location is not supported"},
		{name: "http", art: wf.Artifact{Name: "src", HTTP: &wf.HTTPArtifact{URL: "http://x"}}, wantErr: "listing its http location is not supported"},
		{name: "hdfs, which argoexec has no store for", art: wf.Artifact{Name: "src", HDFS: &wf.HDFSArtifact{Path: "/p"}}, wantErr: "listing its hdfs location is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KindLister{Env: env, Allow: tc.allow}.List(context.Background(), tc.art)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("List = %v, %v; want %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("List = %q, want %q", got, tc.want)
			}
		})
	}
}
