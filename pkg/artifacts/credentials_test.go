package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func sel(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func TestSecretFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "my-s3"), 0o755); err != nil {
		t.Fatal(err)
	}
	for key, v := range map[string]string{"accesskey": "AKID\n", "secretkey": "  SECRET  "} {
		if err := os.WriteFile(filepath.Join(root, "my-s3", key), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name               string
		bucket             wf.S3Bucket
		wantAccess, wantSK string
		wantErr            []string
	}{
		{name: "both mounted", bucket: wf.S3Bucket{AccessKeySecret: sel("my-s3", "accesskey"), SecretKeySecret: sel("my-s3", "secretkey")}, wantAccess: "AKID", wantSK: "SECRET"},
		{name: "key not mounted", bucket: wf.S3Bucket{Bucket: "b", AccessKeySecret: sel("my-s3", "accesskey"), SecretKeySecret: sel("my-s3", "nope")},
			wantErr: []string{"credentials for s3://b", `secretKeySecret: key "nope" of secret "my-s3" is not mounted at ` + filepath.Join(root, "my-s3", "nope")}},
		{name: "secret not mounted", bucket: wf.S3Bucket{AccessKeySecret: sel("gone", "a"), SecretKeySecret: sel("my-s3", "secretkey")},
			wantErr: []string{`key "a" of secret "gone" is not mounted at ` + filepath.Join(root, "gone", "a")}},
		{name: "no selectors", bucket: wf.S3Bucket{},
			wantErr: []string{"accessKeySecret names no secret and key", "secretKeySecret names no secret and key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ak, sk, err := SecretFiles{Root: root}.S3Keys(context.Background(), tt.bucket)
			if len(tt.wantErr) == 0 {
				if err != nil || ak != tt.wantAccess || sk != tt.wantSK {
					t.Fatalf("keys %q, %q, err %v; want %q, %q", ak, sk, err, tt.wantAccess, tt.wantSK)
				}
				return
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestSecretFilesDefaultRoot(t *testing.T) {
	_, _, err := SecretFiles{}.S3Keys(context.Background(), wf.S3Bucket{AccessKeySecret: sel("s", "k"), SecretKeySecret: sel("s", "k")})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(DefaultSecretRoot, "s", "k")) {
		t.Errorf("err = %v; want the path under %s", err, DefaultSecretRoot)
	}
}

func TestStaticKeys(t *testing.T) {
	ak, sk, err := StaticKeys{AccessKey: "a", SecretKey: "s"}.S3Keys(context.Background(), wf.S3Bucket{Bucket: "any"})
	if ak != "a" || sk != "s" || err != nil {
		t.Errorf("got %q %q %v", ak, sk, err)
	}
}
