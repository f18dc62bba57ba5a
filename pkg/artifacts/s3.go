package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// S3Config is what the S3 driver needs besides the artifacts themselves.
type S3Config struct {
	// Default fills, field by field, what an artifact's own s3 location
	// leaves out: our ConfigMap's artifactRepository.s3, or Argo's
	// template.archiveLocation.s3. Region, insecure and the secrets are
	// taken from it only for an artifact on the same endpoint. It may be
	// empty when every artifact carries its full location.
	Default wf.S3Bucket
	// Credentials finds each bucket's keys; nil means anonymous access.
	Credentials Credentials
	// Progress times transfers and says how often long ones log.
	Progress ProgressConfig
	// Tries bounds the attempts of one request when the server cannot be
	// reached or answers 5xx; minio-go backs off between them (from 200 ms,
	// doubling, at most 1 s apart, with jitter). Zero means minio-go's
	// default (10 attempts: about 6 s of an unreachable server).
	Tries int
	// SessionToken is sent with every request as the temporary
	// credentials' session token (OSS's securityToken); empty means none.
	SessionToken string
	// CreateBucket makes Save create the bucket when it does not exist
	// (OSS's createBucketIfNotPresent).
	CreateBucket bool
	// Field is the template field whose locations the driver serves, which
	// errors tell the user to check (artifactRepository.FIELD, archiveLocation.FIELD,
	// the artifact's FIELD): "oss" when the OSS driver uses it; "" means "s3".
	Field string
}

// S3 is the driver for artifacts in S3-compatible buckets: any bucket an
// artifact names, one client per distinct endpoint and keys, made on first
// use. Which buckets are allowed is the caller's policy (StoreConfig.Allow).
type S3 struct {
	cfg S3Config
	log *logrus.Entry

	mu      sync.Mutex
	clients map[clientKey]*minio.Client
}

// clientKey is what one minio client is bound to.
type clientKey struct {
	endpoint, region     string
	insecure             bool
	accessKey, secretKey string
	sessionToken         string
}

// sha256MetaKey is the user-metadata key under which Save records the
// object's SHA-256, checked after the upload and on every download.
const sha256MetaKey = "Sha256"

// NewS3 returns an S3 driver. It checks cfg.Default's endpoint but does not
// contact the server.
func NewS3(cfg S3Config, log *logrus.Entry) (*S3, error) {
	if err := checkEndpoint(cfg.Default.Endpoint); err != nil {
		return nil, err
	}
	return &S3{cfg: cfg, log: log, clients: map[clientKey]*minio.Client{}}, nil
}

func checkEndpoint(endpoint string) error {
	if strings.Contains(endpoint, "://") {
		return fmt.Errorf("s3: endpoint %q must be host[:port] without a scheme; set insecure: true for plain HTTP", endpoint)
	}
	return nil
}

// location is an artifact's full S3 location, Default filled in.
func (s *S3) location(art wf.Artifact) (wf.S3Artifact, error) {
	if art.S3 == nil {
		return wf.S3Artifact{}, fmt.Errorf("s3: artifact %q has no s3 location", art.Name)
	}
	loc, def := *art.S3, s.cfg.Default
	if loc.Endpoint == "" {
		loc.Endpoint = def.Endpoint
	}
	if loc.Endpoint == def.Endpoint {
		if loc.Bucket == "" {
			loc.Bucket = def.Bucket
		}
		if loc.Region == "" {
			loc.Region = def.Region
		}
		if loc.Insecure == nil {
			loc.Insecure = def.Insecure
		}
		if loc.AccessKeySecret == nil {
			loc.AccessKeySecret = def.AccessKeySecret
		}
		if loc.SecretKeySecret == nil {
			loc.SecretKeySecret = def.SecretKeySecret
		}
	}
	if loc.Endpoint == "" || loc.Bucket == "" || loc.Key == "" {
		return wf.S3Artifact{}, fmt.Errorf("s3: artifact %q: endpoint %q, bucket %q and key %q must all be set, on the artifact or by the artifact repository", art.Name, loc.Endpoint, loc.Bucket, loc.Key)
	}
	if err := checkEndpoint(loc.Endpoint); err != nil {
		return wf.S3Artifact{}, err
	}
	return loc, nil
}

// client returns the cached client for loc's endpoint and keys.
func (s *S3) client(ctx context.Context, loc wf.S3Artifact) (*minio.Client, error) {
	k := clientKey{endpoint: loc.Endpoint, region: loc.Region, insecure: loc.Insecure != nil && *loc.Insecure, sessionToken: s.cfg.SessionToken}
	if s.cfg.Credentials != nil {
		var err error
		if k.accessKey, k.secretKey, err = s.cfg.Credentials.S3Keys(ctx, loc.S3Bucket); err != nil {
			return nil, fmt.Errorf("s3: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[k]; ok {
		return c, nil
	}
	c, err := minio.New(k.endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(k.accessKey, k.secretKey, k.sessionToken),
		Secure:     !k.insecure,
		Region:     k.region,
		MaxRetries: s.cfg.Tries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: create client for %s: %w", k.endpoint, err)
	}
	s.clients[k] = c
	return c, nil
}

// Save uploads localPath to the artifact's s3 location: a file as the
// object at the key; a directory as Argo v3.3.8's S3 driver stores one
// (PutDirectory), each regular file under it as its own object at
// KEY/RELATIVE/PATH, directories themselves and symlinks not stored (an
// empty directory stores nothing). Long uploads log their progress. Each
// stored object is checked to have the size and SHA-256 of what was sent;
// the server also verifies a CRC32C checksum of each part.
func (s *S3) Save(ctx context.Context, localPath string, art wf.Artifact) (Object, error) {
	loc, err := s.location(art)
	if err != nil {
		return Object{}, err
	}
	c, err := s.client(ctx, loc)
	if err != nil {
		return Object{}, err
	}
	st, err := os.Stat(localPath)
	if err != nil {
		return Object{}, fmt.Errorf("s3: upload %s: %w", localPath, err)
	}
	if s.cfg.CreateBucket {
		if err := s.createBucket(ctx, c, loc); err != nil {
			return Object{}, err
		}
	}
	if st.IsDir() {
		return s.saveDir(ctx, c, loc, localPath)
	}
	prog := s.cfg.Progress.Start(s.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key}), "upload", st.Size())
	defer prog.Done()
	return s.putFile(ctx, c, loc, localPath, prog)
}

// createBucket makes loc's bucket unless it exists.
func (s *S3) createBucket(ctx context.Context, c *minio.Client, loc wf.S3Artifact) error {
	ok, err := c.BucketExists(ctx, loc.Bucket)
	if err != nil {
		return s.describe("check that the bucket exists for", loc, err)
	}
	if ok {
		return nil
	}
	s.log.WithField("bucket", loc.Bucket).Info("creating the bucket, which does not exist (createBucketIfNotPresent)")
	if err := c.MakeBucket(ctx, loc.Bucket, minio.MakeBucketOptions{Region: loc.Region}); err != nil && minio.ToErrorResponse(err).Code != "BucketAlreadyOwnedByYou" {
		return s.describe("create the bucket for", loc, err)
	}
	return nil
}

// saveDir uploads every regular file under dir to loc.Key/RELATIVE/PATH,
// in lexical order, with one progress for the whole tree.
func (s *S3) saveDir(ctx context.Context, c *minio.Client, loc wf.S3Artifact, dir string) (Object, error) {
	files, total, _, err := walkTree(dir, loc.Key, skipLinks)
	if err != nil {
		return Object{}, fmt.Errorf("s3: upload directory %s: %w", dir, err)
	}
	log := s.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key})
	if len(files) == 0 {
		log.Warnf("s3: %s is an empty directory: nothing is stored under s3://%s/%s/ (as Argo's argoexec), so loading it as an input will find no object", dir, loc.Bucket, loc.Key)
	}
	prog := s.cfg.Progress.Start(log, "upload", total)
	defer prog.Done()
	for _, f := range files {
		one := loc
		one.Key = f.key
		if _, err := s.putFile(ctx, c, one, f.path, prog); err != nil {
			return Object{}, err
		}
	}
	return Object{Key: loc.Key, Size: total, Files: len(files)}, nil
}

// putFile uploads the file localPath to loc.Key, counting its bytes in
// prog, and checks the stored object's size and SHA-256.
func (s *S3) putFile(ctx context.Context, c *minio.Client, loc wf.S3Artifact, localPath string, prog *Progress) (Object, error) {
	f, err := os.Open(localPath)
	if err != nil {
		return Object{}, fmt.Errorf("s3: upload %s: %w", localPath, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Object{}, fmt.Errorf("s3: upload %s: %w", localPath, err)
	}
	sum, err := fileSHA256(f)
	if err != nil {
		return Object{}, fmt.Errorf("s3: hash %s: %w", localPath, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Object{}, fmt.Errorf("s3: upload %s: %w", localPath, err)
	}
	_, err = c.PutObject(ctx, loc.Bucket, loc.Key, f, st.Size(), minio.PutObjectOptions{
		ContentType:  "application/octet-stream",
		UserMetadata: map[string]string{sha256MetaKey: sum},
		Progress:     prog,
	})
	if err != nil {
		return Object{}, s.describe("upload", loc, err)
	}
	info, err := c.StatObject(ctx, loc.Bucket, loc.Key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, s.describe("check uploaded object", loc, err)
	}
	if info.Size != st.Size() {
		return Object{}, fmt.Errorf("s3: check uploaded object s3://%s/%s: stored %d bytes, sent %d", loc.Bucket, loc.Key, info.Size, st.Size())
	}
	if got := info.UserMetadata[sha256MetaKey]; got != sum {
		return Object{}, fmt.Errorf("s3: check uploaded object s3://%s/%s: stored SHA-256 %q, sent %q", loc.Bucket, loc.Key, got, sum)
	}
	return Object{Key: loc.Key, Size: st.Size(), SHA256: sum, Files: 1}, nil
}

// Load downloads the artifact's object into the local file at localPath,
// creating or truncating it. When there is no object at the key but there
// are objects under KEY/ (a directory, as Save and Argo's S3 driver store
// one), it downloads them into a new directory at localPath instead, each
// at its key's path below KEY/, as Argo v3.3.8's driver does (IsDirectory,
// GetDirectory). When an object records a SHA-256 (objects uploaded by Save
// do), its download is checked against it. Neither an object nor any under
// the key is an error wrapping ErrNotFound.
func (s *S3) Load(ctx context.Context, art wf.Artifact, localPath string) error {
	loc, err := s.location(art)
	if err != nil {
		return err
	}
	c, err := s.client(ctx, loc)
	if err != nil {
		return err
	}
	obj, err := c.GetObject(ctx, loc.Bucket, loc.Key, minio.GetObjectOptions{})
	if err != nil {
		return s.describe("download", loc, err)
	}
	defer obj.Close()
	info, err := obj.Stat()
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		objs, lerr := listUnder(ctx, c, loc.Bucket, dirPrefix(loc.Key))
		if lerr != nil {
			return s.describe("list the directory", loc, lerr)
		}
		if len(objs) == 0 {
			return fmt.Errorf("%w (and no object under %s/: not a directory either); check the key, and that the step that should have stored it succeeded", s.describe("download", loc, err), strings.TrimSuffix(loc.Key, "/"))
		}
		return s.loadDir(ctx, c, loc, objs, localPath)
	}
	if err != nil {
		return s.describe("download", loc, err)
	}
	prog := s.cfg.Progress.Start(s.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key}), "download", info.Size)
	defer prog.Done()
	return getObject(obj, info, loc, localPath, prog)
}

// loadDir downloads objs, the objects under loc.Key/, into a new directory
// at dir, refusing a key whose path would land outside it.
func (s *S3) loadDir(ctx context.Context, c *minio.Client, loc wf.S3Artifact, objs []minio.ObjectInfo, dir string) error {
	prefix := dirPrefix(loc.Key)
	var total int64
	for _, o := range objs {
		total += o.Size
	}
	rels := make([]string, len(objs))
	for i, o := range objs {
		var err error
		if rels[i], err = treePath(fmt.Sprintf("s3: download directory s3://%s/%s at %s", loc.Bucket, prefix, loc.Endpoint), prefix, o.Key); err != nil {
			return err
		}
	}
	s.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key, "objects": len(objs)}).Info("no object at the key: downloading the directory under it")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("s3: download directory s3://%s/%s: %w", loc.Bucket, prefix, err)
	}
	prog := s.cfg.Progress.Start(s.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key}), "download", total)
	defer prog.Done()
	for i, o := range objs {
		dest := filepath.Join(dir, rels[i])
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return fmt.Errorf("s3: download s3://%s/%s: %w", loc.Bucket, o.Key, err)
		}
		one := loc
		one.Key = o.Key
		obj, err := c.GetObject(ctx, loc.Bucket, o.Key, minio.GetObjectOptions{})
		if err != nil {
			return s.describe("download", one, err)
		}
		info, err := obj.Stat()
		if err != nil {
			obj.Close()
			return s.describe("download", one, err)
		}
		err = getObject(obj, info, one, dest, prog)
		obj.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// getObject copies obj into a new file at localPath, counting its bytes in
// prog, and checks it against the SHA-256 it records, if any.
func getObject(obj io.Reader, info minio.ObjectInfo, loc wf.S3Artifact, localPath string, prog *Progress) error {
	f, err := os.Create(localPath)
	if err != nil {
		return fmt.Errorf("s3: download s3://%s/%s: %w", loc.Bucket, loc.Key, err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h, prog), obj)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("s3: download s3://%s/%s to %s: %w", loc.Bucket, loc.Key, localPath, err)
	}
	if want := info.UserMetadata[sha256MetaKey]; want != "" && want != hex.EncodeToString(h.Sum(nil)) {
		return fmt.Errorf("s3: download s3://%s/%s: content does not match its recorded SHA-256 %s", loc.Bucket, loc.Key, want)
	}
	return nil
}

// describe turns an S3 error into one that says what to check.
func (s *S3) describe(op string, loc wf.S3Artifact, err error) error {
	where := fmt.Sprintf("s3: %s s3://%s/%s at %s", op, loc.Bucket, loc.Key, loc.Endpoint)
	field := s.cfg.Field
	if field == "" {
		field = wf.KindS3
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey":
		return fmt.Errorf("%s: %w", where, ErrNotFound)
	case resp.Code == "NoSuchBucket":
		return fmt.Errorf("%s: bucket does not exist; create it or fix the bucket (artifactRepository.%[2]s.bucket, archiveLocation.%[2]s.bucket or the artifact's %[2]s.bucket): %[3]w", where, field, err)
	// XAdminUserNotFound (404) is versitygw's answer to an access key it
	// has no user for.
	case resp.Code == "AccessDenied", resp.Code == "InvalidAccessKeyId", resp.Code == "SignatureDoesNotMatch", resp.Code == "XAdminUserNotFound",
		resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s: credentials refused; check the secrets named by accessKeySecret and secretKeySecret (of artifactRepository.%[2]s, archiveLocation.%[2]s or the artifact's %[2]s): %[3]w", where, field, err)
	case isUnreachable(err):
		return fmt.Errorf("%s: the S3 server did not answer, retried with backoff; is it up and reachable from the pod (endpoint, port, network policy)? %w", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// isUnreachable says whether err is a failure to reach the server at all
// (refused, reset, timed out, no route), as opposed to an answer.
func isUnreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

func fileSHA256(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// errNoS3 is returned for s3 artifacts when no S3 driver is configured.
var errNoS3 = errors.New("no S3 repository is configured: set artifactRepository.s3 in the argoexec-step ConfigMap (or archiveLocation.s3 on the template)")
