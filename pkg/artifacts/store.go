// Package artifacts moves artifacts between local files and where they are
// stored. Each kind of store argoexec implements (S3-compatible buckets,
// URLs for download, data inline in the template, git repositories,
// Artifactory URLs, OSS buckets through their S3-compatible API) is a Driver registered
// once in Kinds; a Store picks the driver by the kind of the artifact's
// location, refuses a kind it has no driver for before any transfer
// (Store.Check), applies the caller's bucket policy, and unpacks tarballs on
// load. Every transfer reports through one Progress.
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Driver moves artifacts of one location kind (s3, http, raw) between where
// they are stored and local files. S3, HTTP and the Store itself implement it.
type Driver interface {
	// Load fetches the object at the artifact's location into the local
	// file localPath, as stored (a Driver does not unpack; a Store does);
	// a store with directories (s3) makes localPath a directory of the
	// objects under a location that is one.
	Load(ctx context.Context, art wf.Artifact, localPath string) error
	// Save stores the local file localPath at the artifact's location; a
	// store with directories also takes a directory, as Argo's driver of
	// that store lays it out.
	Save(ctx context.Context, localPath string, art wf.Artifact) (Object, error)
}

// Object describes a stored object, or a stored directory of them.
type Object struct {
	// Key is the object's key in its bucket (a directory's key prefix).
	Key string
	// Size is its length in bytes (the sum of a directory's files).
	Size int64
	// SHA256 is the hex SHA-256 of its content; empty for a directory,
	// whose files' are each checked and recorded on their own objects.
	SHA256 string
	// Files is how many objects were stored: 1 for a file.
	Files int
}

// ErrNotFound is wrapped by Load errors when the artifact does not exist
// (an S3 key that is not there, an HTTP 404): an optional input may be
// absent.
var ErrNotFound = errors.New("object not found")

// ErrNotSupported is wrapped by errors for what a driver cannot do, such as
// saving to an HTTP URL.
var ErrNotSupported = errors.New("not supported")

// BucketPolicy says whether an s3 artifact may be loaded from or saved to
// its location; a refusal is an error that says why.
type BucketPolicy func(loc *wf.S3Artifact) error

// RepositoryOnly allows only the repository's bucket: an artifact that
// names another endpoint or bucket is refused. Our controller passes only
// the repository's keys, so another bucket could not be reached anyway.
func RepositoryOnly(repo wf.S3Bucket) BucketPolicy {
	return func(loc *wf.S3Artifact) error {
		if (loc.Bucket != "" && loc.Bucket != repo.Bucket) || (loc.Endpoint != "" && loc.Endpoint != repo.Endpoint) {
			return fmt.Errorf("s3://%s/%s at %s is not in the artifact repository (s3://%s at %s): only the repository's bucket is allowed, whose credentials this pod holds",
				loc.Bucket, loc.Key, loc.Endpoint, repo.Bucket, repo.Endpoint)
		}
		return nil
	}
}

// StoreConfig holds a Store's drivers and policy.
type StoreConfig struct {
	// Drivers move artifacts, by the kind of location they serve
	// (workflow.KindS3 ...). A kind in Kinds missing here is not
	// configured; http and raw, which need no configuration, are added when
	// absent.
	Drivers map[string]Driver
	// Allow checks every s3 location before it is used; nil allows any.
	Allow BucketPolicy
}

// Store loads and saves artifacts wherever they live, picking the driver by
// the kind of the artifact's location. It implements Driver, with Load also
// unpacking.
type Store struct {
	drivers map[string]Driver
	allow   BucketPolicy
}

// NewStore returns a Store over cfg's drivers.
func NewStore(cfg StoreConfig, log *logrus.Entry) *Store {
	d := make(map[string]Driver, len(cfg.Drivers)+2)
	for k, v := range cfg.Drivers {
		d[k] = v
	}
	if d[wf.KindHTTP] == nil {
		d[wf.KindHTTP] = NewHTTP(HTTPConfig{}, log)
	}
	if d[wf.KindRaw] == nil {
		d[wf.KindRaw] = raw{}
	}
	return &Store{drivers: d, allow: cfg.Allow}
}

// Check says, before any transfer, whether the store can move art: as an
// input (output false) or an output. An output with no location of its own
// passes: the controller's repository decides where it goes.
func (s *Store) Check(art wf.Artifact, output bool) error {
	kind := art.Location().Kind()
	switch k, ok := kindOf(kind); {
	case kind == "" && output:
		return nil
	case kind == "":
		return fmt.Errorf("artifact %q has no location argoexec can use: set one of %s", art.Name, kindNames(false))
	case !ok:
		return fmt.Errorf("artifact %q: %w: argoexec has no %s store (it has %s); %s",
			art.Name, ErrNotSupported, kind, kindNames(false), insteadOf(kind))
	case output && !k.Save:
		return fmt.Errorf("artifact %q: %w: an output cannot be saved to its %s location, which only loads (outputs go to %s)", art.Name, ErrNotSupported, kind, kindNames(true))
	case s.drivers[kind] == nil && kind == wf.KindS3:
		return fmt.Errorf("artifact %q: %w", art.Name, errNoS3)
	case s.drivers[kind] == nil:
		return fmt.Errorf("artifact %q: no %s store is configured: the controller passed no %s repository or credentials", art.Name, kind, kind)
	}
	return nil
}

// insteadOf says what to do with an artifact of a kind argoexec has no
// store for.
func insteadOf(kind string) string {
	if kind == wf.KindHDFS {
		// No HDFS server can be run where argoexec is tested, so there is
		// no driver to trust: say how to get by without one.
		return "store the artifact in an S3-compatible bucket instead (the artifact repository's s3, or the artifact's own s3 location; " +
			"a step that copies it between HDFS and S3 with Hadoop's own client can bridge the two), or run this workflow with Argo's own argoexec image"
	}
	return "move the artifact to one of those"
}

// driver picks the driver for art's location.
func (s *Store) driver(art wf.Artifact) (Driver, error) {
	if err := s.Check(art, false); err != nil {
		return nil, err
	}
	if art.S3 != nil && s.allow != nil {
		if err := s.allow(art.S3); err != nil {
			return nil, err
		}
	}
	return s.drivers[art.Location().Kind()], nil
}

// Load puts the artifact at dest, whose parent directory must exist: a raw
// artifact's data as is; a directory the driver fetched (an s3 key that is
// a prefix) as is; a fetched object unpacked when it is a tarball
// (gzip) unless the artifact says `archive: none`, a tarball of one entry
// becoming that entry (a file or a directory, as it was archived), and of
// several a directory of them; else the object itself. Unpacking refuses
// entries that would land outside dest (pkg/archive). A missing artifact is
// an error wrapping ErrNotFound.
func (s *Store) Load(ctx context.Context, art wf.Artifact, dest string) error {
	d, err := s.driver(art)
	if err != nil {
		return err
	}
	if art.Raw != nil {
		return d.Load(ctx, art, dest)
	}
	// Fetch next to dest, so the final rename stays on one filesystem.
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".load-"+filepath.Base(dest)+"-")
	if err != nil {
		return fmt.Errorf("load to %s: %w", dest, err)
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "download")
	if err := d.Load(ctx, art, file); err != nil {
		return err
	}
	if art.Archive != nil && art.Archive.None != nil {
		return rename(file, dest)
	}
	if st, err := os.Stat(file); err == nil && st.IsDir() {
		return rename(file, dest) // a directory of objects, stored as files
	}
	gz, err := isGzipFile(file)
	if err != nil {
		return err
	}
	if !gz {
		return rename(file, dest) // not a tarball: the file is the artifact
	}
	return unpack(ctx, file, tmp, dest)
}

// Save stores the local file or directory localPath at the artifact's
// location (s3; an http or raw artifact cannot be saved).
func (s *Store) Save(ctx context.Context, localPath string, art wf.Artifact) (Object, error) {
	d, err := s.driver(art)
	if err != nil {
		return Object{}, err
	}
	return d.Save(ctx, localPath, art)
}

func rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("move the artifact to %s: %w", to, err)
	}
	return nil
}

// raw is the driver for data written in the template.
type raw struct{}

// Load writes the artifact's data to localPath.
func (raw) Load(_ context.Context, art wf.Artifact, localPath string) error {
	if err := os.WriteFile(localPath, []byte(art.Raw.Data), 0o644); err != nil {
		return fmt.Errorf("raw: write %s: %w", localPath, err)
	}
	return nil
}

// Save refuses: raw data lives in the template.
func (raw) Save(_ context.Context, _ string, art wf.Artifact) (Object, error) {
	return Object{}, fmt.Errorf("raw: artifact %q: %w: raw artifacts are inputs only; store outputs in s3", art.Name, ErrNotSupported)
}
