package artifacts

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// List returns the keys of every object under the artifact's key, taken as
// a directory, as Argo v3.3.8's S3 driver lists them for a data template's
// source.artifactPaths: recursively, in the server's (lexical) order,
// without the empty "directory" objects some consoles create (keys ending
// in "/"). An empty key lists the whole bucket. No object is an empty (nil)
// list, not an error.
func (s *S3) List(ctx context.Context, art wf.Artifact) ([]string, error) {
	if art.S3 == nil {
		return nil, fmt.Errorf("s3: list artifact %q: it has no s3 location", art.Name)
	}
	prefix := art.S3.Key
	probe := art
	s3 := *art.S3
	if s3.Key == "" {
		s3.Key = "/" // location wants a key; a listing may have none
	}
	probe.S3 = &s3
	loc, err := s.location(probe)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		prefix = dirPrefix(prefix)
	}
	loc.Key = prefix
	c, err := s.client(ctx, loc)
	if err != nil {
		return nil, err
	}
	objs, err := listUnder(ctx, c, loc.Bucket, prefix)
	if err != nil {
		return nil, s.describe("list", loc, err)
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return keys, nil
}

// dirPrefix is key taken as a directory: cleaned, with one trailing slash,
// as Argo's S3 driver lists a directory.
func dirPrefix(key string) string {
	return path.Clean(key) + "/"
}

// listUnder lists every object whose key starts with prefix, recursively,
// in the server's (lexical) order, without the empty "directory" objects
// some consoles create (keys ending in "/").
func listUnder(ctx context.Context, c *minio.Client, bucket, prefix string) ([]minio.ObjectInfo, error) {
	var objs []minio.ObjectInfo
	for obj := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, obj.Err
		}
		if strings.HasSuffix(obj.Key, "/") {
			continue
		}
		objs = append(objs, obj)
	}
	return objs, nil
}
