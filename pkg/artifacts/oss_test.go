package artifacts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// ossArt is an OSS artifact at endpoint/bucket/key with the keys of the
// secret "oss".
func ossArt(endpoint, bucket, key string) wf.Artifact {
	return wf.Artifact{Name: "art", OSS: &wf.OSSArtifact{Key: key, OSSBucket: wf.OSSBucket{Endpoint: endpoint, Bucket: bucket,
		AccessKeySecret: sel("oss", "access"), SecretKeySecret: sel("oss", "secret")}}}
}

func TestOSSRoundTrip(t *testing.T) {
	f, endpoint := serveFake(t)
	secrets := secretDir(t, map[string]string{"oss/access": "AK", "oss/secret": "SK"})
	o := NewOSS(OSSConfig{Credentials: secrets, Tries: 1}, discard())
	art := ossArt("http://"+endpoint, "bkt", "wf/pod/art.tgz")
	art.OSS.SecurityToken = "sts-token"
	art.OSS.CreateBucketIfNotPresent = true
	obj, err := o.Save(context.Background(), writeFile(t, "hello"), art)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Key != "wf/pod/art.tgz" || obj.Size != 5 || string(f.objects["bkt/wf/pod/art.tgz"]) != "hello" {
		t.Errorf("Save = %+v; stored %q", obj, keysOf(f.objects))
	}
	if _, ok := f.objects["bkt/"]; !ok {
		t.Errorf("createBucketIfNotPresent: no bucket made (PUT /bkt); stored %s", keysOf(f.objects))
	}
	if len(f.accessKeys) == 0 || f.accessKeys[0] != "AK" || len(f.tokens) == 0 || f.tokens[0] != "sts-token" {
		t.Errorf("signed with %v, tokens %v; want AK and sts-token", f.accessKeys, f.tokens)
	}
	dest := filepath.Join(t.TempDir(), "got")
	if err := o.Load(context.Background(), art, dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "hello" {
		t.Errorf("loaded %q", b)
	}
}

// TestOSSRelocate: an artifact with only a key (as Argo reports an output)
// takes the archiveLocation's endpoint, bucket and secrets.
func TestOSSRelocate(t *testing.T) {
	f, endpoint := serveFake(t)
	f.objects["bkt/wf/pod/art.tgz"] = []byte("x")
	secrets := secretDir(t, map[string]string{"oss/access": "AK", "oss/secret": "SK"})
	def := ossArt(endpoint, "bkt", "wf/other-pod").OSS
	o := NewOSS(OSSConfig{Default: def, Credentials: secrets, Tries: 1}, discard())
	if err := o.Load(context.Background(), wf.Artifact{Name: "art", OSS: &wf.OSSArtifact{Key: "wf/pod/art.tgz"}}, filepath.Join(t.TempDir(), "got")); err != nil {
		t.Fatal(err)
	}
	if len(f.accessKeys) == 0 || f.accessKeys[0] != "AK" {
		t.Errorf("signed with %v, want the archiveLocation's AK", f.accessKeys)
	}
}

func TestOSSErrors(t *testing.T) {
	tests := []struct {
		name     string
		art      func(endpoint string) wf.Artifact
		denied   bool
		secrets  map[string]string
		save     bool
		want     []string
		notFound bool
	}{
		{name: "missing object", art: func(e string) wf.Artifact { return ossArt(e, "bkt", "nope") },
			want: []string{"oss (through its S3-compatible API): s3: download s3://bkt/nope", "object not found", "check the key"}, notFound: true},
		{name: "bad credentials", art: func(e string) wf.Artifact { return ossArt(e, "bkt", "k") }, denied: true,
			want: []string{"oss (through its S3-compatible API)", "credentials refused; check the secrets named by accessKeySecret and secretKeySecret (of artifactRepository.oss, archiveLocation.oss or the artifact's oss)"}},
		{name: "secret not mounted", art: func(e string) wf.Artifact { return ossArt(e, "bkt", "k") }, secrets: map[string]string{"oss/access": "AK"},
			want: []string{"secretKeySecret", `key "secret" of secret "oss" is not mounted`}},
		{name: "no endpoint and no repository", art: func(string) wf.Artifact { return wf.Artifact{Name: "art", OSS: &wf.OSSArtifact{Key: "k"}} },
			want: []string{`oss: artifact "art": endpoint "", bucket "" and key "k" must all be set`, "artifactRepository.oss"}},
		{name: "unreachable", art: func(string) wf.Artifact { return ossArt("http://127.0.0.1:1", "bkt", "k") }, save: true,
			want: []string{"oss (through its S3-compatible API)", "did not answer", "reachable from the pod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, endpoint := serveFake(t)
			f.denied = tt.denied
			secrets := tt.secrets
			if secrets == nil {
				secrets = map[string]string{"oss/access": "AK", "oss/secret": "SK"}
			}
			o := NewOSS(OSSConfig{Credentials: secretDir(t, secrets), Tries: 1}, discard())
			var err error
			if tt.save {
				_, err = o.Save(context.Background(), writeFile(t, "x"), tt.art("http://"+endpoint))
			} else {
				err = o.Load(context.Background(), tt.art("http://"+endpoint), filepath.Join(t.TempDir(), "got"))
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if got := strings.Contains(err.Error(), ErrNotFound.Error()); got != tt.notFound {
				t.Errorf("not found = %v, want %v", got, tt.notFound)
			}
		})
	}
}

func TestS3Location(t *testing.T) {
	tests := []struct {
		endpoint, host, region string
		insecure               bool
	}{
		{endpoint: "http://10.88.0.1:7070", host: "10.88.0.1:7070", insecure: true},
		{endpoint: "oss-cn-hangzhou.aliyuncs.com", host: "oss-cn-hangzhou.aliyuncs.com", region: "oss-cn-hangzhou", insecure: true}, // Argo's client: http:// when none
		{endpoint: "https://oss-cn-beijing-internal.aliyuncs.com/", host: "oss-cn-beijing-internal.aliyuncs.com", region: "oss-cn-beijing"},
		{endpoint: "https://s3.example.com", host: "s3.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			l := s3Location(wf.OSSArtifact{OSSBucket: wf.OSSBucket{Endpoint: tt.endpoint, Bucket: "b"}, Key: "k"})
			if l.Endpoint != tt.host || l.Region != tt.region || *l.Insecure != tt.insecure || l.Bucket != "b" || l.Key != "k" {
				t.Errorf("s3Location = %+v (insecure %v), want %s %q insecure %v", l, *l.Insecure, tt.host, tt.region, tt.insecure)
			}
		})
	}
}

// TestOSSVersitygw runs the OSS driver against the testbed's S3
// (versitygw), when ARGOEXEC_E2E_S3_ENDPOINT and its keys are set (source
// /var/lib/argoexec-testbed/s3.env): a new bucket made by
// createBucketIfNotPresent, a file and a directory both ways, then the
// bucket removed.
func TestOSSVersitygw(t *testing.T) {
	endpoint, ak, sk := os.Getenv("ARGOEXEC_E2E_S3_ENDPOINT"), os.Getenv("ARGOEXEC_E2E_S3_ACCESS_KEY"), os.Getenv("ARGOEXEC_E2E_S3_SECRET_KEY")
	if endpoint == "" || ak == "" || sk == "" || testing.Short() && os.Getenv("ARGOEXEC_TEST_S3") == "" {
		t.Skip("no testbed S3: set ARGOEXEC_E2E_S3_ENDPOINT, _ACCESS_KEY and _SECRET_KEY (hack/cluster.sh's s3.env); in -short also ARGOEXEC_TEST_S3=1")
	}
	bucket := fmt.Sprintf("argoexec-oss-test-%d", time.Now().UnixNano())
	secrets := secretDir(t, map[string]string{"oss/access": ak, "oss/secret": sk})
	o := NewOSS(OSSConfig{Credentials: secrets, Tries: 2}, discard())
	host := strings.TrimPrefix(endpoint, "http://")
	mc, err := minio.New(host, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() {
		for obj := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			_ = mc.RemoveObject(ctx, bucket, obj.Key, minio.RemoveObjectOptions{})
		}
		_ = mc.RemoveBucket(ctx, bucket)
	})
	art := ossArt(endpoint, bucket, "wf/pod/art.tgz")
	art.OSS.CreateBucketIfNotPresent = true
	if _, err := o.Save(ctx, writeFile(t, "hello oss"), art); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "got")
	if err := o.Load(ctx, art, dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "hello oss" {
		t.Errorf("loaded %q", b)
	}
	tree := map[string]string{"a.txt": "a", "sub/b.txt": "b"}
	dir := ossArt(endpoint, bucket, "wf/pod/dir")
	if _, err := o.Save(ctx, writeTree(t, tree), dir); err != nil {
		t.Fatal(err)
	}
	// Argo's OSS driver stores a "directory" object for each directory: it is skipped.
	if _, err := mc.PutObject(ctx, bucket, "wf/pod/dir/sub/", strings.NewReader(""), 0, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(t.TempDir(), "dir")
	if err := o.Load(ctx, dir, got); err != nil {
		t.Fatal(err)
	}
	if g := readTree(t, got); fmt.Sprint(g) != fmt.Sprint(tree) {
		t.Errorf("loaded tree %v, want %v", g, tree)
	}
	if err := o.Load(ctx, ossArt(endpoint, bucket, "missing"), filepath.Join(t.TempDir(), "m")); err == nil || !strings.Contains(err.Error(), "object not found") {
		t.Errorf("missing object: %v", err)
	}
}
