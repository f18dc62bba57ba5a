package workflow

import (
	"errors"
	"fmt"
	"testing"
)

// TestLocationKeys checks Key, WithKey and KeyOnly against Argo v3.3's GetKey and SetKey for
// every kind, and that WithKey leaves the location it was called on as it was.
func TestLocationKeys(t *testing.T) {
	tests := []struct {
		name    string
		loc     ArtifactLocation
		wantKey string
		wantErr error
	}{
		{"s3", ArtifactLocation{S3: &S3Artifact{S3Bucket: S3Bucket{Bucket: "b"}, Key: "p"}}, "p", nil},
		{"oss", ArtifactLocation{OSS: &OSSArtifact{OSSBucket: OSSBucket{Bucket: "b"}, Key: "p"}}, "p", nil},
		{"gcs", ArtifactLocation{GCS: &GCSArtifact{GCSBucket: GCSBucket{Bucket: "b"}, Key: "p"}}, "p", nil},
		{"hdfs", ArtifactLocation{HDFS: &HDFSArtifact{Path: "/p"}}, "/p", nil},
		{"artifactory", ArtifactLocation{Artifactory: &ArtifactoryArtifact{URL: "http://h:8081/generic/p"}}, "/generic/p", nil},
		{"http", ArtifactLocation{HTTP: &HTTPArtifact{URL: "https://h/a/b?x=1"}}, "/a/b", nil},
		{"git has no key", ArtifactLocation{Git: &GitArtifact{Repo: "r"}}, "", ErrNoKey},
		{"raw has no key", ArtifactLocation{Raw: &RawArtifact{Data: "d"}}, "", ErrNoKey},
		{"no location", ArtifactLocation{}, "", ErrNoKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprintf("%+v", kindStruct(tt.loc))
			key, err := tt.loc.Key()
			with, werr := tt.loc.WithKey("k/x.tgz")
			one, oerr := tt.loc.KeyOnly("k/x.tgz")
			if tt.wantErr != nil {
				for _, e := range []error{err, werr, oerr} {
					if !errors.Is(e, tt.wantErr) {
						t.Errorf("err = %v, want %v", e, tt.wantErr)
					}
				}
				return
			}
			if err != nil || werr != nil || oerr != nil {
				t.Fatalf("errors: %v, %v, %v", err, werr, oerr)
			}
			if key != tt.wantKey {
				t.Errorf("Key = %q, want %q", key, tt.wantKey)
			}
			if got, _ := with.Key(); got != "k/x.tgz" && got != "/k/x.tgz" {
				t.Errorf("WithKey then Key = %q", got)
			}
			if got, _ := one.Key(); got != "k/x.tgz" && got != "/k/x.tgz" {
				t.Errorf("KeyOnly then Key = %q", got)
			}
			if with.Kind() != tt.loc.Kind() || one.Kind() != tt.loc.Kind() {
				t.Errorf("kinds %q, %q, want %q", with.Kind(), one.Kind(), tt.loc.Kind())
			}
			// Only the key changed: putting the old key back gives the location back.
			if back, err := with.WithKey(key); err != nil || fmt.Sprintf("%+v", kindStruct(back)) != before {
				t.Errorf("WithKey changed more than the key: back %+v (%v), was %s", kindStruct(back), err, before)
			}
			if after := fmt.Sprintf("%+v", kindStruct(tt.loc)); after != before {
				t.Errorf("WithKey changed the location it was called on: %s, was %s", after, before)
			}
		})
	}
}

// TestKeyOnlyKeepsNothingElse checks that KeyOnly drops bucket, host and credentials: what
// Argo's argoexec reports for an artifact under its archiveLocation.
func TestKeyOnlyKeepsNothingElse(t *testing.T) {
	rt, err := ArtifactLocation{Artifactory: &ArtifactoryArtifact{URL: "http://h:8081/generic/p", ArtifactoryAuth: ArtifactoryAuth{}}}.KeyOnly("/generic/p/out.tgz")
	if err != nil || rt.Artifactory.URL != "/generic/p/out.tgz" {
		t.Errorf("artifactory KeyOnly = %+v, %v; want the URL /generic/p/out.tgz", rt.Artifactory, err)
	}
	s3, err := ArtifactLocation{S3: &S3Artifact{S3Bucket: S3Bucket{Bucket: "b", Endpoint: "e"}, Key: "p"}}.KeyOnly("p/out.tgz")
	if err != nil || *s3.S3 != (S3Artifact{Key: "p/out.tgz"}) {
		t.Errorf("s3 KeyOnly = %+v, %v; want the key alone", s3.S3, err)
	}
}

func kindStruct(l ArtifactLocation) any {
	switch {
	case l.S3 != nil:
		return *l.S3
	case l.OSS != nil:
		return *l.OSS
	case l.GCS != nil:
		return *l.GCS
	case l.HDFS != nil:
		return *l.HDFS
	case l.Artifactory != nil:
		return *l.Artifactory
	case l.HTTP != nil:
		return *l.HTTP
	}
	return nil
}
