package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
)

// fakeS3 stores objects in memory and can be told to lose bytes or to lie
// about metadata, so the checks in Put and Get have something to catch.
type fakeS3 struct {
	mu       sync.Mutex
	objects  map[string][]byte
	meta     map[string]string
	truncate bool
	denied   bool
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.denied {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/bkt/")
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

func newFake(t *testing.T) (*fakeS3, *S3) {
	t.Helper()
	f := &fakeS3{objects: map[string][]byte{}, meta: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	l := logrus.New()
	l.SetOutput(io.Discard)
	s, err := NewS3(S3Config{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "bkt", Region: "us-east-1", Insecure: true, AccessKey: "a", SecretKey: "s"}, logrus.NewEntry(l))
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

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
	obj, err := s.Put(context.Background(), "wf/pod/a.tgz", writeFile(t, "hello artifact"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("hello artifact"))
	if obj.Size != 14 || obj.SHA256 != hex.EncodeToString(sum[:]) || obj.Key != "wf/pod/a.tgz" {
		t.Errorf("object = %+v", obj)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if err := s.Get(context.Background(), "wf/pod/a.tgz", dest); err != nil {
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
			name:    "server stores fewer bytes than sent",
			setup:   func(f *fakeS3) { f.truncate = true },
			op:      func(s *S3) error { _, err := s.Put(context.Background(), "k", writeFile(t, "0123456789")); return err },
			wantErr: "s3: check uploaded object s3://bkt/k: stored 5 bytes, sent 10",
		},
		{
			name:    "credentials refused",
			setup:   func(f *fakeS3) { f.denied = true },
			op:      func(s *S3) error { _, err := s.Put(context.Background(), "k", writeFile(t, "x")); return err },
			wantErr: "credentials refused; check the secrets named by artifactRepository.s3.accessKeySecret",
		},
		{
			name:    "missing key",
			op:      func(s *S3) error { return s.Get(context.Background(), "nope", filepath.Join(t.TempDir(), "x")) },
			wantErr: "object not found",
		},
		{
			name: "download does not match the recorded checksum",
			setup: func(f *fakeS3) {
				f.objects["k"] = []byte("tampered")
				f.meta["k"] = strings.Repeat("0", 64)
			},
			op:      func(s *S3) error { return s.Get(context.Background(), "k", filepath.Join(t.TempDir(), "x")) },
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

func TestNewS3RejectsScheme(t *testing.T) {
	_, err := NewS3(S3Config{Endpoint: "http://s3:9000", Bucket: "b"}, logrus.NewEntry(logrus.New()))
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
