package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Credentials finds the keys for an S3 bucket. The S3 driver asks for them
// per bucket and does not know where they come from: each controller
// protocol passes its own (StaticKeys, SecretFiles).
type Credentials interface {
	// S3Keys returns the access key ID and secret access key for bucket, as
	// the artifact (or the repository it falls back to) describes it.
	S3Keys(ctx context.Context, bucket wf.S3Bucket) (accessKey, secretKey string, err error)
}

// StaticKeys are one pair of keys used for every bucket: our pod builder
// passes the repository's keys in the environment (workflow.EnvS3AccessKey
// and workflow.EnvS3SecretKey).
type StaticKeys struct {
	// AccessKey is the access key ID.
	AccessKey string
	// SecretKey is the secret access key.
	SecretKey string
}

// S3Keys returns k's keys, whatever the bucket.
func (k StaticKeys) S3Keys(context.Context, wf.S3Bucket) (string, string, error) {
	return k.AccessKey, k.SecretKey, nil
}

// DefaultSecretRoot is where Argo's workflow controller mounts the secrets
// that artifacts name: the key KEY of secret NAME is the file
// DefaultSecretRoot/NAME/KEY.
const DefaultSecretRoot = "/argo/secret"

// SecretFiles reads each bucket's keys from the secret files Argo's
// workflow controller mounts: the files named by the bucket's
// accessKeySecret and secretKeySecret, under Root.
type SecretFiles struct {
	// Root is the directory holding one directory per secret; empty means
	// DefaultSecretRoot.
	Root string
}

// S3Keys reads the files ROOT/NAME/KEY that bucket's accessKeySecret and
// secretKeySecret name; surrounding white space is dropped.
func (f SecretFiles) S3Keys(_ context.Context, bucket wf.S3Bucket) (string, string, error) {
	access, aerr := f.read("accessKeySecret", bucket.AccessKeySecret)
	secret, serr := f.read("secretKeySecret", bucket.SecretKeySecret)
	if err := errors.Join(aerr, serr); err != nil {
		return "", "", fmt.Errorf("credentials for s3://%s at %s: %w", bucket.Bucket, bucket.Endpoint, err)
	}
	return access, secret, nil
}

// Secret reads the file ROOT/NAME/KEY that sel names, as it is (Argo's
// GetSecret); field names the artifact's field that names it, for
// messages.
func (f SecretFiles) Secret(field string, sel *corev1.SecretKeySelector) (string, error) {
	return f.readRaw(field, field, sel)
}

func (f SecretFiles) read(field string, sel *corev1.SecretKeySelector) (string, error) {
	v, err := f.readRaw(field, "s3."+field, sel)
	return strings.TrimSpace(v), err
}

// readRaw reads the file sel names; set is the field to set when sel
// names none.
func (f SecretFiles) readRaw(field, set string, sel *corev1.SecretKeySelector) (string, error) {
	if sel == nil || sel.Name == "" || sel.Key == "" {
		return "", fmt.Errorf("%s names no secret and key; set %s on the artifact or on the template's archiveLocation", field, set)
	}
	root := f.Root
	if root == "" {
		root = DefaultSecretRoot
	}
	p := filepath.Join(root, sel.Name, sel.Key)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: key %q of secret %q is not mounted at %s; check that the secret exists with that key and that the controller mounts it: %w", field, sel.Key, sel.Name, p, err)
	}
	if err != nil {
		return "", fmt.Errorf("%s: read key %q of secret %q: %w", field, sel.Key, sel.Name, err)
	}
	return string(b), nil
}
