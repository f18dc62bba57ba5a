package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// fakeS3 stores objects in memory and can be told to lose bytes or to lie
// about metadata, so the checks in Put and Get have something to catch.
type fakeS3 struct {
	mu       sync.Mutex
	objects  map[string][]byte // by BUCKET/KEY
	meta     map[string]string
	truncate bool
	denied   bool
	// unknownUser answers every request as versitygw answers one signed
	// with an access key it has no user for.
	unknownUser bool
	// accessKeys are the access key IDs requests were signed with.
	accessKeys []string
	// tokens are the session tokens requests carried.
	tokens []string
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.denied {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		return
	}
	if f.unknownUser {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `<Error><Code>XAdminUserNotFound</Code><Message>No user exists with the provided access key ID.</Message></Error>`)
		return
	}
	if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
		id, _, _ := strings.Cut(cred, "/")
		f.accessKeys = append(f.accessKeys, id)
	}
	if tok := r.Header.Get("X-Amz-Security-Token"); tok != "" {
		f.tokens = append(f.tokens, tok)
	}
	key := strings.TrimPrefix(r.URL.Path, "/")
	if r.Method == http.MethodGet && r.URL.Query().Has("location") {
		io.WriteString(w, `<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">us-east-1</LocationConstraint>`)
		return
	}
	if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
		f.list(w, strings.TrimSuffix(key, "/"), r.URL.Query().Get("prefix"))
		return
	}
	switch r.Method {
	case http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Amz-Decoded-Content-Length") != "" {
			b = decodeAWSChunked(b)
		}
		if f.truncate {
			b = b[:len(b)/2]
		}
		f.objects[key] = b
		f.meta[key] = r.Header.Get("X-Amz-Meta-Sha256")
		w.Header().Set("ETag", `"etag"`)
	case http.MethodHead, http.MethodGet:
		b, ok := f.objects[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			if r.Method == http.MethodGet {
				io.WriteString(w, `<Error><Code>NoSuchKey</Code><Message>no</Message></Error>`)
			}
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Header().Set("ETag", `"etag"`)
		w.Header().Set("Last-Modified", "Mon, 30 Nov 2026 12:00:00 GMT")
		w.Header().Set("X-Amz-Meta-Sha256", f.meta[key])
		if r.Method == http.MethodGet {
			w.Write(b)
		}
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// list answers ListObjectsV2 for bucket with the keys under prefix, in
// lexical order, in one page.
func (f *fakeS3) list(w http.ResponseWriter, bucket, prefix string) {
	type content struct {
		Key  string `xml:"Key"`
		Size int    `xml:"Size"`
	}
	res := struct {
		XMLName  xml.Name  `xml:"ListBucketResult"`
		Name     string    `xml:"Name"`
		Prefix   string    `xml:"Prefix"`
		KeyCount int       `xml:"KeyCount"`
		MaxKeys  int       `xml:"MaxKeys"`
		Contents []content `xml:"Contents"`
	}{Name: bucket, Prefix: prefix, MaxKeys: 1000}
	var keys []string
	for k := range f.objects {
		if key, ok := strings.CutPrefix(k, bucket+"/"); ok && strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		res.Contents = append(res.Contents, content{Key: k, Size: len(f.objects[bucket+"/"+k])})
	}
	res.KeyCount = len(res.Contents)
	w.Header().Set("Content-Type", "application/xml")
	_ = xml.NewEncoder(w).Encode(res)
}

// newFake serves a fakeS3 and returns an S3 driver whose default bucket is
// its "bkt", signing with the keys "a" and "s".
func newFake(t *testing.T) (*fakeS3, *S3) {
	t.Helper()
	f, endpoint := serveFake(t)
	s, err := NewS3(S3Config{Default: wf.S3Bucket{Endpoint: endpoint, Bucket: "bkt", Region: "us-east-1", Insecure: ptr(true)}, Credentials: StaticKeys{AccessKey: "a", SecretKey: "s"}}, discard())
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

// serveFake serves a new fakeS3 and returns it with its host:port.
func serveFake(t *testing.T) (*fakeS3, string) {
	f := &fakeS3{objects: map[string][]byte{}, meta: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, strings.TrimPrefix(srv.URL, "http://")
}

func ptr[T any](v T) *T { return &v }

func discard() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// s3Art is an artifact at key of the driver's default bucket.
func s3Art(key string) wf.Artifact { return wf.Artifact{Name: "a", S3: &wf.S3Artifact{Key: key}} }

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestS3PutGetRoundTrip(t *testing.T) {
	_, s := newFake(t)
	obj, err := s.Save(context.Background(), writeFile(t, "hello artifact"), s3Art("wf/pod/a.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("hello artifact"))
	if obj.Size != 14 || obj.SHA256 != hex.EncodeToString(sum[:]) || obj.Key != "wf/pod/a.tgz" {
		t.Errorf("object = %+v", obj)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if err := s.Load(context.Background(), s3Art("wf/pod/a.tgz"), dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "hello artifact" {
		t.Errorf("downloaded %q", b)
	}
}

func TestS3Errors(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f *fakeS3)
		op      func(s *S3) error
		wantErr string
	}{
		{
			name:  "server stores fewer bytes than sent",
			setup: func(f *fakeS3) { f.truncate = true },
			op: func(s *S3) error {
				_, err := s.Save(context.Background(), writeFile(t, "0123456789"), s3Art("k"))
				return err
			},
			wantErr: "s3: check uploaded object s3://bkt/k: stored 5 bytes, sent 10",
		},
		{
			name:    "credentials refused",
			setup:   func(f *fakeS3) { f.denied = true },
			op:      func(s *S3) error { _, err := s.Save(context.Background(), writeFile(t, "x"), s3Art("k")); return err },
			wantErr: "credentials refused; check the secrets named by accessKeySecret and secretKeySecret",
		},
		{
			name:  "access key unknown to the server (versitygw)",
			setup: func(f *fakeS3) { f.unknownUser = true },
			op: func(s *S3) error {
				return s.Load(context.Background(), s3Art("k"), filepath.Join(t.TempDir(), "x"))
			},
			wantErr: "credentials refused; check the secrets named by accessKeySecret and secretKeySecret (of artifactRepository.s3, archiveLocation.s3 or the artifact's s3)",
		},
		{
			name:    "missing key",
			op:      func(s *S3) error { return s.Load(context.Background(), s3Art("nope"), filepath.Join(t.TempDir(), "x")) },
			wantErr: "object not found",
		},
		{
			name: "download does not match the recorded checksum",
			setup: func(f *fakeS3) {
				f.objects["bkt/k"] = []byte("tampered")
				f.meta["bkt/k"] = strings.Repeat("0", 64)
			},
			op:      func(s *S3) error { return s.Load(context.Background(), s3Art("k"), filepath.Join(t.TempDir(), "x")) },
			wantErr: "content does not match its recorded SHA-256",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s := newFake(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			err := tt.op(s)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestS3Unreachable: an S3 server that does not answer is retried (Tries attempts), then an
// error names the object, the endpoint, and what to check.
func TestS3Unreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	s, err := NewS3(S3Config{Default: wf.S3Bucket{Endpoint: endpoint, Bucket: "bkt", Region: "us-east-1", Insecure: ptr(true)},
		Credentials: StaticKeys{AccessKey: "a", SecretKey: "s"}, Tries: 1}, discard())
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Save(context.Background(), writeFile(t, "x"), s3Art("wf/pod/a.tgz"))
	for _, want := range []string{"s3: upload s3://bkt/wf/pod/a.tgz at " + endpoint, "the S3 server did not answer", "reachable from the pod", "connection refused"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Save: %v, want it to say %q", err, want)
		}
	}
}

func TestNewS3RejectsScheme(t *testing.T) {
	_, err := NewS3(S3Config{Default: wf.S3Bucket{Endpoint: "http://s3:9000", Bucket: "b"}}, discard())
	if err == nil || !strings.Contains(err.Error(), "without a scheme") {
		t.Fatalf("err = %v", err)
	}
}

// decodeAWSChunked strips the aws-chunked framing ("SIZE;chunk-signature=...\r\nDATA\r\n",
// ending with a zero-size chunk and optional trailers) that minio-go uses for
// signed streaming uploads over plain HTTP.
func decodeAWSChunked(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		line, rest, ok := strings.Cut(string(b), "\r\n")
		if !ok {
			break
		}
		sizeHex, _, _ := strings.Cut(line, ";")
		var size int
		fmt.Sscanf(sizeHex, "%x", &size)
		if size == 0 {
			break
		}
		out = append(out, rest[:size]...)
		b = []byte(rest[size+2:])
	}
	return out
}

// TestS3ArtifactOwnLocation: an artifact that names its own endpoint and
// bucket goes there, signed with the keys Credentials gives for it, over a
// client made once per endpoint and keys.
func TestS3ArtifactOwnLocation(t *testing.T) {
	repo, s := newFake(t)
	other, endpoint := serveFake(t)
	secrets := t.TempDir()
	for name, body := range map[string]string{"other/ak": "other-access\n", "other/sk": "other-secret\n"} {
		if err := os.MkdirAll(filepath.Join(secrets, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(secrets, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.cfg.Credentials = SecretFiles{Root: secrets}
	s.cfg.Default.AccessKeySecret = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "repo"}, Key: "ak"}
	own := wf.Artifact{Name: "own", S3: &wf.S3Artifact{Key: "p/own.tgz", S3Bucket: wf.S3Bucket{
		Endpoint: endpoint, Bucket: "elsewhere", Region: "eu-west-1", Insecure: ptr(true),
		AccessKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "ak"},
		SecretKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "sk"},
	}}}
	for range 2 {
		if _, err := s.Save(context.Background(), writeFile(t, "own"), own); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Load(context.Background(), own, filepath.Join(t.TempDir(), "x")); err != nil {
		t.Fatal(err)
	}
	if string(other.objects["elsewhere/p/own.tgz"]) != "own" || len(repo.objects) != 0 {
		t.Errorf("other endpoint holds %v, repository %v; want the object on the other endpoint only", other.objects, repo.objects)
	}
	for _, k := range other.accessKeys {
		if k != "other-access" {
			t.Fatalf("request signed with access key %q, want the artifact's secret's other-access", k)
		}
	}
	if len(s.clients) != 1 {
		t.Errorf("%d clients for one endpoint and keys, want 1", len(s.clients))
	}
	// The repository's artifact, with the repository's secret (not mounted).
	_, err := s.Save(context.Background(), writeFile(t, "x"), s3Art("k"))
	if err == nil || !strings.Contains(err.Error(), `key "ak" of secret "repo" is not mounted at `+filepath.Join(secrets, "repo", "ak")) {
		t.Errorf("err = %v; want the missing repository secret named", err)
	}
}

func TestS3LocationErrors(t *testing.T) {
	tests := []struct {
		name    string
		art     wf.Artifact
		wantErr string
	}{
		{name: "no key", art: s3Art(""), wantErr: `key "" must all be set`},
		{name: "scheme in the artifact's endpoint", art: wf.Artifact{S3: &wf.S3Artifact{Key: "k", S3Bucket: wf.S3Bucket{Endpoint: "https://x", Bucket: "b"}}}, wantErr: "without a scheme"},
		{name: "other endpoint, no bucket", art: wf.Artifact{S3: &wf.S3Artifact{Key: "k", S3Bucket: wf.S3Bucket{Endpoint: "x:9000"}}}, wantErr: `bucket ""`},
		{name: "not s3", art: wf.Artifact{Name: "h", HTTP: &wf.HTTPArtifact{URL: "http://x"}}, wantErr: `artifact "h" has no s3 location`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, s := newFake(t)
			err := s.Load(context.Background(), tt.art, filepath.Join(t.TempDir(), "x"))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestS3Progress: uploads and downloads report through Progress (a clock
// that moves one interval per reading makes every write a progress line).
func TestS3Progress(t *testing.T) {
	_, s := newFake(t)
	log, hook := logtest.NewNullLogger()
	s.log = logrus.NewEntry(log)
	s.cfg.Progress = ProgressConfig{Clock: &steppingClock{FakeClock: testclock.NewFakeClock(time.Unix(0, 0)), step: time.Second}, Every: time.Second}
	if _, err := s.Save(context.Background(), writeFile(t, "payload"), s3Art("k")); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(context.Background(), s3Art("k"), filepath.Join(t.TempDir(), "x")); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range hook.AllEntries() {
		got[e.Message]++
		if e.Data["key"] != "k" || e.Data["bucket"] != "bkt" {
			t.Errorf("%q has fields %v; want bucket and key", e.Message, e.Data)
		}
	}
	for _, m := range []string{"upload in progress", "upload finished", "download in progress", "download finished"} {
		if got[m] == 0 {
			t.Errorf("no %q line; got %v", m, got)
		}
	}
}

// steppingClock is a fake clock that moves step forward each time it is read.
type steppingClock struct {
	*testclock.FakeClock
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.Step(c.step)
	return c.FakeClock.Now()
}
