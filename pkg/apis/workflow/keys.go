package workflow

import (
	"errors"
	"fmt"
	"net/url"
)

// ErrNoKey is wrapped by Key, WithKey and KeyOnly for a location whose kind
// has no object key (git, raw) and for no location at all.
var ErrNoKey = errors.New("this kind of location has no key")

// Key is l's object key, as Argo v3.3's ArtifactLocation.GetKey: the key of
// s3, oss and gcs, the path of hdfs, the path of an artifactory or http URL.
// It is the one place that knows where each kind keeps its key, so that
// rules over keys (Argo's archiveLocation KEY/NAME.tgz) need no case per
// kind.
func (l ArtifactLocation) Key() (string, error) {
	switch {
	case l.S3 != nil:
		return l.S3.Key, nil
	case l.OSS != nil:
		return l.OSS.Key, nil
	case l.GCS != nil:
		return l.GCS.Key, nil
	case l.HDFS != nil:
		return l.HDFS.Path, nil
	case l.Artifactory != nil:
		return urlPath(l.Artifactory.URL)
	case l.HTTP != nil:
		return urlPath(l.HTTP.URL)
	}
	return "", noKey(l)
}

// WithKey is l with its key set to key, as Argo's SetKey, on a copy of the
// kind's struct: l itself is not changed.
func (l ArtifactLocation) WithKey(key string) (ArtifactLocation, error) {
	switch {
	case l.S3 != nil:
		l.S3 = changed(l.S3, func(c *S3Artifact) { c.Key = key })
	case l.OSS != nil:
		l.OSS = changed(l.OSS, func(c *OSSArtifact) { c.Key = key })
	case l.GCS != nil:
		l.GCS = changed(l.GCS, func(c *GCSArtifact) { c.Key = key })
	case l.HDFS != nil:
		l.HDFS = changed(l.HDFS, func(c *HDFSArtifact) { c.Path = key })
	case l.Artifactory != nil:
		u, err := withURLPath(l.Artifactory.URL, key)
		if err != nil {
			return l, fmt.Errorf("artifactory url %q: %w", l.Artifactory.URL, err)
		}
		l.Artifactory = changed(l.Artifactory, func(c *ArtifactoryArtifact) { c.URL = u })
	case l.HTTP != nil:
		u, err := withURLPath(l.HTTP.URL, key)
		if err != nil {
			return l, fmt.Errorf("http url %q: %w", l.HTTP.URL, err)
		}
		l.HTTP = changed(l.HTTP, func(c *HTTPArtifact) { c.URL = u })
	default:
		return l, noKey(l)
	}
	return l, nil
}

// KeyOnly is a location of l's kind that holds key and nothing else (for
// artifactory and http a URL that is only that path): how Argo's argoexec
// reports an artifact saved under its archiveLocation, the controller
// filling bucket, host and credentials back in where it is consumed.
func (l ArtifactLocation) KeyOnly(key string) (ArtifactLocation, error) {
	var zero ArtifactLocation
	switch {
	case l.S3 != nil:
		zero.S3 = &S3Artifact{}
	case l.OSS != nil:
		zero.OSS = &OSSArtifact{}
	case l.GCS != nil:
		zero.GCS = &GCSArtifact{}
	case l.HDFS != nil:
		zero.HDFS = &HDFSArtifact{}
	case l.Artifactory != nil:
		zero.Artifactory = &ArtifactoryArtifact{}
	case l.HTTP != nil:
		zero.HTTP = &HTTPArtifact{}
	default:
		return zero, noKey(l)
	}
	return zero.WithKey(key)
}

// changed is a copy of *p with set applied: WithKey never writes through
// the caller's pointers.
func changed[T any](p *T, set func(*T)) *T {
	c := *p
	set(&c)
	return &c
}

func noKey(l ArtifactLocation) error {
	if k := l.Kind(); k != "" {
		return fmt.Errorf("%s location: %w", k, ErrNoKey)
	}
	return fmt.Errorf("no location: %w", ErrNoKey)
}

func urlPath(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	return u.Path, nil
}

func withURLPath(s, p string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	u.Path, u.RawPath = p, ""
	return u.String(), nil
}
