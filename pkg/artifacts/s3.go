// Package artifacts moves artifacts between local files and where they are
// stored: S3-compatible buckets, inline raw data, and HTTP URLs (download only).
package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/sirupsen/logrus"
)

// S3Config locates a bucket and holds the credentials to reach it.
type S3Config struct {
	// Endpoint is host[:port] of the S3 service, without a scheme.
	Endpoint string
	// Bucket is the bucket name.
	Bucket string
	// Region is the bucket's region; empty lets the client discover it.
	Region string
	// Insecure talks plain HTTP instead of HTTPS.
	Insecure bool
	// AccessKey and SecretKey are the static credentials.
	AccessKey, SecretKey string
	// ProgressEvery is how often long transfers log progress; zero means 5 s.
	ProgressEvery time.Duration
}

// S3 uploads and downloads objects of one bucket.
type S3 struct {
	cfg    S3Config
	client *minio.Client
	log    *logrus.Entry
}

// sha256MetaKey is the user-metadata key under which Put records the
// object's SHA-256, checked after the upload and reported with the artifact.
const sha256MetaKey = "Sha256"

// NewS3 returns a client for cfg's bucket. It does not contact the server.
func NewS3(cfg S3Config, log *logrus.Entry) (*S3, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("s3: endpoint %q and bucket %q must both be set (ConfigMap artifactRepository.s3)", cfg.Endpoint, cfg.Bucket)
	}
	if strings.Contains(cfg.Endpoint, "://") {
		return nil, fmt.Errorf("s3: endpoint %q must be host[:port] without a scheme; set artifactRepository.s3.insecure for plain HTTP", cfg.Endpoint)
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = 5 * time.Second
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: !cfg.Insecure,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: create client for %s: %w", cfg.Endpoint, err)
	}
	return &S3{cfg: cfg, client: client, log: log.WithField("bucket", cfg.Bucket)}, nil
}

// Object describes an uploaded object.
type Object struct {
	// Key is the object's key in the bucket.
	Key string
	// Size is its length in bytes.
	Size int64
	// SHA256 is the hex SHA-256 of its content.
	SHA256 string
}

// Put uploads the local file at path to key, logging progress for long
// uploads, then checks that the stored object has the size and SHA-256 of
// what was sent. The server also verifies a CRC32C checksum of each part.
func (s *S3) Put(ctx context.Context, key, path string) (Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return Object{}, fmt.Errorf("s3: upload %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Object{}, fmt.Errorf("s3: upload %s: %w", path, err)
	}
	sum, err := fileSHA256(f)
	if err != nil {
		return Object{}, fmt.Errorf("s3: hash %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Object{}, fmt.Errorf("s3: upload %s: %w", path, err)
	}
	prog := newProgress(s.log.WithField("key", key), "upload", st.Size(), s.cfg.ProgressEvery)
	defer prog.done()
	_, err = s.client.PutObject(ctx, s.cfg.Bucket, key, f, st.Size(), minio.PutObjectOptions{
		ContentType:  "application/octet-stream",
		UserMetadata: map[string]string{sha256MetaKey: sum},
		Progress:     prog,
	})
	if err != nil {
		return Object{}, s.describe("upload", key, err)
	}
	info, err := s.client.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, s.describe("check uploaded object", key, err)
	}
	if info.Size != st.Size() {
		return Object{}, fmt.Errorf("s3: check uploaded object s3://%s/%s: stored %d bytes, sent %d", s.cfg.Bucket, key, info.Size, st.Size())
	}
	if got := info.UserMetadata[sha256MetaKey]; got != sum {
		return Object{}, fmt.Errorf("s3: check uploaded object s3://%s/%s: stored SHA-256 %q, sent %q", s.cfg.Bucket, key, got, sum)
	}
	return Object{Key: key, Size: st.Size(), SHA256: sum}, nil
}

// Get downloads key into the local file at path, creating or truncating it.
// When the object records a SHA-256 (objects uploaded by Put do), the
// download is checked against it.
func (s *S3) Get(ctx context.Context, key, path string) error {
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return s.describe("download", key, err)
	}
	defer obj.Close()
	info, err := obj.Stat()
	if err != nil {
		return s.describe("download", key, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("s3: download s3://%s/%s: %w", s.cfg.Bucket, key, err)
	}
	h := sha256.New()
	prog := newProgress(s.log.WithField("key", key), "download", info.Size, s.cfg.ProgressEvery)
	_, err = io.Copy(io.MultiWriter(f, h, prog), obj)
	prog.done()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("s3: download s3://%s/%s to %s: %w", s.cfg.Bucket, key, path, err)
	}
	if want := info.UserMetadata[sha256MetaKey]; want != "" && want != hex.EncodeToString(h.Sum(nil)) {
		return fmt.Errorf("s3: download s3://%s/%s: content does not match its recorded SHA-256 %s", s.cfg.Bucket, key, want)
	}
	return nil
}

// ErrNotFound is wrapped by Get errors when the key does not exist.
var ErrNotFound = errors.New("object not found")

// describe turns an S3 error into one that says what to check.
func (s *S3) describe(op, key string, err error) error {
	where := fmt.Sprintf("s3: %s s3://%s/%s at %s", op, s.cfg.Bucket, key, s.cfg.Endpoint)
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey":
		return fmt.Errorf("%s: %w", where, ErrNotFound)
	case resp.Code == "NoSuchBucket":
		return fmt.Errorf("%s: bucket does not exist; create it or fix artifactRepository.s3.bucket: %w", where, err)
	case resp.Code == "AccessDenied", resp.Code == "InvalidAccessKeyId", resp.Code == "SignatureDoesNotMatch", resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s: credentials refused; check the secrets named by artifactRepository.s3.accessKeySecret and secretKeySecret: %w", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

func fileSHA256(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
