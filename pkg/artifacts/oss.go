package artifacts

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// OSSConfig is what the OSS driver needs besides the artifacts themselves.
type OSSConfig struct {
	// Default is the template's archiveLocation.oss, which replaces an
	// artifact location without an endpoint or bucket, the artifact's key
	// kept, as Argo v3.3.8's Relocate does. Nil means none.
	Default *wf.OSSArtifact
	// Credentials reads accessKeySecret and secretKeySecret.
	Credentials Credentials
	// Progress times transfers and says how often long ones log.
	Progress ProgressConfig
	// Tries bounds the attempts of one request (S3Config.Tries).
	Tries int
	// RepositoryOnly allows only Default's endpoint and bucket.
	RepositoryOnly bool
}

// OSS is the driver for objects in Alibaba Cloud OSS buckets, through
// OSS's S3-compatible API: the S3 driver with the bucket's endpoint
// (http:// when it names no scheme, as Argo's OSS client defaults to),
// keys, securityToken as the session token, and createBucketIfNotPresent.
// Directories are stored and loaded as the S3 driver does, which reads
// Argo's OSS layout too (its empty "directory" objects are skipped). A
// lifecycleRule is not applied: it is an OSS bucket setting, not part of
// the S3-compatible API; the object is stored and a warning logged.
type OSS struct {
	cfg OSSConfig
	log *logrus.Entry

	mu      sync.Mutex
	drivers map[ossDriverKey]*S3
}

// ossDriverKey is what one S3 driver of an OSS store is bound to.
type ossDriverKey struct {
	token     string
	create    bool
	anonymous bool
}

// NewOSS returns an OSS driver; it does not contact the server.
func NewOSS(cfg OSSConfig, log *logrus.Entry) *OSS {
	return &OSS{cfg: cfg, log: log, drivers: map[ossDriverKey]*S3{}}
}

// location is the artifact's full OSS location, relocated onto the
// default as Argo's Relocate does when it has no endpoint or bucket.
func (o *OSS) location(art wf.Artifact) (wf.OSSArtifact, error) {
	if art.OSS == nil {
		return wf.OSSArtifact{}, fmt.Errorf("oss: artifact %q has no oss location", art.Name)
	}
	loc := *art.OSS
	if (loc.Endpoint == "" || loc.Bucket == "") && o.cfg.Default != nil {
		key := loc.Key
		loc = *o.cfg.Default
		loc.Key = key
	}
	if o.cfg.RepositoryOnly {
		def := o.cfg.Default
		if def == nil || loc.Endpoint != def.Endpoint || loc.Bucket != def.Bucket {
			repo := "none"
			if def != nil {
				repo = fmt.Sprintf("bucket %q at %q", def.Bucket, def.Endpoint)
			}
			return loc, fmt.Errorf("oss: artifact %q: bucket %q at %q is not the artifact repository's (artifactRepository.oss: %s): only the repository's bucket is allowed, whose credentials this pod holds; leave the artifact's endpoint and bucket out, or use the repository's", art.Name, loc.Bucket, loc.Endpoint, repo)
		}
	}
	if loc.Endpoint == "" || loc.Bucket == "" || loc.Key == "" {
		return loc, fmt.Errorf("oss: artifact %q: endpoint %q, bucket %q and key %q must all be set, on the artifact or by the artifact repository (artifactRepository.oss)", art.Name, loc.Endpoint, loc.Bucket, loc.Key)
	}
	return loc, nil
}

// s3Location is loc for the S3 driver: the endpoint without its scheme,
// insecure unless it is https://, and the region an Alibaba endpoint names.
func s3Location(loc wf.OSSArtifact) wf.S3Artifact {
	host, insecure := loc.Endpoint, true
	if h, ok := strings.CutPrefix(host, "https://"); ok {
		host, insecure = h, false
	} else if h, ok := strings.CutPrefix(host, "http://"); ok {
		host = h
	}
	host = strings.TrimSuffix(host, "/")
	return wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: host, Bucket: loc.Bucket, Region: ossRegion(host), Insecure: &insecure,
		AccessKeySecret: loc.AccessKeySecret, SecretKeySecret: loc.SecretKeySecret}, Key: loc.Key}
}

// ossRegion is the region of an Alibaba Cloud endpoint
// (oss-cn-hangzhou[-internal].aliyuncs.com is oss-cn-hangzhou); "" for
// another host, whose region the S3 client asks the server for.
func ossRegion(host string) string {
	name, _, _ := strings.Cut(host, ":")
	first, rest, _ := strings.Cut(name, ".")
	if !strings.HasPrefix(first, "oss-") || rest != "aliyuncs.com" {
		return ""
	}
	return strings.TrimSuffix(first, "-internal")
}

// driver is the S3 driver for loc's credentials and options.
func (o *OSS) driver(loc wf.OSSArtifact, save bool) (*S3, error) {
	k := ossDriverKey{token: loc.SecurityToken, create: save && loc.CreateBucketIfNotPresent,
		anonymous: loc.AccessKeySecret == nil || loc.AccessKeySecret.Name == ""}
	o.mu.Lock()
	defer o.mu.Unlock()
	if d := o.drivers[k]; d != nil {
		return d, nil
	}
	cfg := S3Config{Credentials: o.cfg.Credentials, Progress: o.cfg.Progress, Tries: o.cfg.Tries, SessionToken: k.token, CreateBucket: k.create, Field: wf.KindOSS}
	if k.anonymous {
		cfg.Credentials = nil // Argo's driver too goes without keys when none is named
	}
	d, err := NewS3(cfg, o.log)
	if err != nil {
		return nil, err
	}
	o.drivers[k] = d
	return d, nil
}

// Load downloads the artifact's object, or the directory under its key,
// to localPath (S3.Load).
func (o *OSS) Load(ctx context.Context, art wf.Artifact, localPath string) error {
	loc, err := o.location(art)
	if err != nil {
		return err
	}
	d, err := o.driver(loc, false)
	if err != nil {
		return err
	}
	one := art
	one.OSS, one.S3 = nil, ptrTo(s3Location(loc))
	if err := d.Load(ctx, one, localPath); err != nil {
		return fmt.Errorf("oss (through its S3-compatible API): %w", err)
	}
	return nil
}

// Save uploads the file or directory localPath to the artifact's key
// (S3.Save), creating the bucket first with createBucketIfNotPresent.
func (o *OSS) Save(ctx context.Context, localPath string, art wf.Artifact) (Object, error) {
	loc, err := o.location(art)
	if err != nil {
		return Object{}, err
	}
	if r := loc.LifecycleRule; r != nil && (r.MarkDeletionAfterDays != 0 || r.MarkInfrequentAccessAfterDays != 0) {
		o.log.WithFields(logrus.Fields{"artifact": art.Name, "bucket": loc.Bucket}).Warn("oss: lifecycleRule is not applied: argoexec reaches OSS through its S3-compatible API, which has no OSS lifecycle rules; set the rule on the bucket in the OSS console")
	}
	d, err := o.driver(loc, true)
	if err != nil {
		return Object{}, err
	}
	one := art
	one.OSS, one.S3 = nil, ptrTo(s3Location(loc))
	obj, err := d.Save(ctx, localPath, one)
	if err != nil {
		return Object{}, fmt.Errorf("oss (through its S3-compatible API): %w", err)
	}
	return obj, nil
}

// List returns the keys of every object under the artifact's key, taken
// as a directory, for a data template's source.artifactPaths (S3.List,
// through OSS's S3-compatible API), every page of it. Argo v3.3.8's OSS
// driver differs: it takes the key as a plain prefix (KEY, not KEY/),
// keeps "directory" objects, returns only the first page (100 keys) and
// turns on the bucket's access logging first; this does none of that. An
// empty key lists the whole bucket; no object is an empty (nil) list.
func (o *OSS) List(ctx context.Context, art wf.Artifact) ([]string, error) {
	if art.OSS == nil {
		return nil, fmt.Errorf("oss: list artifact %q: it has no oss location", art.Name)
	}
	probe := art
	one := *art.OSS
	if one.Key == "" {
		one.Key = "/" // location wants a key; a listing may have none
	}
	probe.OSS = &one
	loc, err := o.location(probe)
	if err != nil {
		return nil, err
	}
	loc.Key = art.OSS.Key
	d, err := o.driver(loc, false)
	if err != nil {
		return nil, err
	}
	s3 := art
	s3.OSS, s3.S3 = nil, ptrTo(s3Location(loc))
	keys, err := d.List(ctx, s3)
	if err != nil {
		return nil, fmt.Errorf("oss (through its S3-compatible API): %w", err)
	}
	return keys, nil
}

func ptrTo[T any](v T) *T { return &v }
