package artifacts

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestGCSList: List takes the key as a plain prefix, as Argo v3.3.8's gcs
// ListObjects does, and follows nextPageToken (the fake pages two objects
// at a time); a bucket that is not there, and a server that answers 403,
// give errors naming the artifact, the listing and what to check.
func TestGCSList(t *testing.T) {
	f, srv := newFakeGCS(t, "bkt")
	for _, n := range []string{"logs/", "logs/a/main.log", "logs/b/main.log", "logs/c/main.log", "logsx/d", "top"} {
		f.put("bkt", n, "x", nil)
	}
	for _, tt := range []struct {
		name    string
		art     wf.Artifact
		fail    []int
		want    string
		wantErr string
	}{
		{name: "a prefix over two pages", art: gcsArt("src", "bkt", "logs/"), want: "logs/,logs/a/main.log,logs/b/main.log,logs/c/main.log"},
		{name: "a key without a slash is a plain prefix", art: gcsArt("src", "bkt", "logs"), want: "logs/,logs/a/main.log,logs/b/main.log,logs/c/main.log,logsx/d"},
		{name: "no key: the whole bucket, three pages", art: gcsArt("src", "bkt", ""), want: "logs/,logs/a/main.log,logs/b/main.log,logs/c/main.log,logsx/d,top"},
		{name: "nothing under the prefix", art: gcsArt("src", "bkt", "none/"), want: ""},
		{name: "the bucket relocated from the repository", art: wf.Artifact{Name: "src", GCS: &wf.GCSArtifact{Key: "top"}}, want: "top"},
		{name: "no bucket", art: gcsArt("src", "gone", "logs/"), wantErr: `artifact "src": gcs: list gs://gone/logs/: 404 Not Found: The specified bucket does not exist.; the bucket does not exist`},
		{name: "refused", art: gcsArt("src", "bkt", "logs/"), fail: []int{http.StatusForbidden}, wantErr: `artifact "src": gcs: list gs://bkt/logs/: 403 Forbidden: injected; credentials refused`},
		{name: "no gcs location", art: wf.Artifact{Name: "src"}, wantErr: `gcs: list artifact "src": it has no gcs location`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f.mu.Lock()
			f.fail, f.requests = tt.fail, 0
			f.mu.Unlock()
			g := testGCS(srv.URL, GCSConfig{Default: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "bkt"}}, Endpoints: GCSEndpoints{EmulatorHost: "unused"}, Tries: 1})
			got, err := g.List(context.Background(), tt.art)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("List = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("List = %q, want %q", got, tt.want)
			}
			if tt.want == "" && got != nil {
				t.Errorf("List = %#v, want nil for no object", got)
			}
			if pages := (len(got) + 1) / 2; len(got) > 0 && f.requests != pages {
				t.Errorf("%d requests for %d names, want %d pages", f.requests, len(got), pages)
			}
		})
	}
}

// TestOSSList: OSS lists through the S3 driver's List, against the fake S3:
// the key as a directory, every key under it, the directory object left
// out, signed with the artifact's keys; the repository fills in the
// endpoint and bucket.
func TestOSSList(t *testing.T) {
	f, endpoint := serveFake(t)
	for _, k := range []string{"bkt/logs/", "bkt/logs/a/main.log", "bkt/logs/b/main.log", "bkt/logsx/c", "bkt/top"} {
		f.objects[k] = []byte("x")
	}
	secrets := secretDir(t, map[string]string{"oss/access": "AK", "oss/secret": "SK"})
	def := ossArt("http://"+endpoint, "bkt", "").OSS
	o := NewOSS(OSSConfig{Default: def, Credentials: secrets, Tries: 1}, discard())
	for _, tt := range []struct {
		name    string
		art     wf.Artifact
		want    string
		wantErr string
	}{
		{name: "a directory", art: ossArt("http://"+endpoint, "bkt", "logs"), want: "logs/a/main.log,logs/b/main.log"},
		{name: "a key alone, relocated", art: wf.Artifact{Name: "art", OSS: &wf.OSSArtifact{Key: "logs/"}}, want: "logs/a/main.log,logs/b/main.log"},
		{name: "the whole bucket", art: ossArt("http://"+endpoint, "bkt", ""), want: "logs/a/main.log,logs/b/main.log,logsx/c,top"},
		{name: "nothing there", art: ossArt("http://"+endpoint, "bkt", "none"), want: ""},
		{name: "no oss location", art: wf.Artifact{Name: "art"}, wantErr: `oss: list artifact "art": it has no oss location`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := o.List(context.Background(), tt.art)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("List = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("List = %q, want %q", got, tt.want)
			}
		})
	}
	if len(f.accessKeys) == 0 || f.accessKeys[len(f.accessKeys)-1] != "AK" {
		t.Errorf("signed with %v, want AK", f.accessKeys)
	}
	dead := NewOSS(OSSConfig{Credentials: secrets, Tries: 1}, discard())
	_, err := dead.List(ctxTimeout(t, 20*time.Second), ossArt("http://127.0.0.1:1", "bkt", "logs"))
	if err == nil || !strings.Contains(err.Error(), "oss (through its S3-compatible API)") {
		t.Errorf("List against nothing: %v, want the oss store named", err)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
