package artifacts

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// treeFile is one file of a directory being saved, and the key it is
// stored at.
type treeFile struct {
	// key is KEY/RELATIVE/PATH.
	key string
	// path is the local file to read: the file itself, or what a symlink
	// to a file in the directory resolves to.
	path string
	// size is its length in bytes.
	size int64
}

// treeLinks says what walkTree does with a symlink.
type treeLinks int

const (
	// skipLinks stores no symlink, as Argo v3.3.8's S3 driver (PutDirectory).
	skipLinks treeLinks = iota
	// followLinks stores a symlink to a regular file as that file's
	// content, as Argo v3.3.8's GCS driver does (it opens every entry that
	// is not a directory); a link to a directory, or to anything outside
	// dir, is skipped (with dir being a copy in wait's filesystem, an
	// absolute or escaping link would read wait's files, not main's).
	followLinks
)

// walkTree lists the regular files under dir, in lexical order, each with
// the key KEY/RELATIVE/PATH that Argo's drivers store it at: directories
// are prefixes and are not stored themselves (an empty one stores nothing).
// skipped lists the symlinks not stored, for a warning.
func walkTree(dir, key string, links treeLinks) (files []treeFile, total int64, skipped []string, err error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, 0, nil, err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		src := p
		if d.Type()&fs.ModeSymlink != 0 {
			target, ok := linkInside(root, p)
			if links == skipLinks || !ok {
				skipped = append(skipped, rel)
				return nil
			}
			src = target
		} else if !d.Type().IsRegular() {
			skipped = append(skipped, rel)
			return nil
		}
		info, err := os.Stat(src)
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			skipped = append(skipped, rel)
			return nil
		}
		files = append(files, treeFile{key: path.Join(key, filepath.ToSlash(rel)), path: src, size: info.Size()})
		total += info.Size()
		return nil
	})
	return files, total, skipped, err
}

// linkInside is what the symlink p resolves to when that is under root.
func linkInside(root, p string) (string, bool) {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(root, target)
	return target, err == nil && filepath.IsLocal(rel)
}

// treePath is where the object at key, under the directory prefix (ending
// in "/"), is written below a directory being loaded; an error when it
// would land outside it (a key with "..", or the prefix itself).
func treePath(store, prefix, key string) (string, error) {
	rel := filepath.FromSlash(strings.TrimPrefix(key, prefix))
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: object %q would be written outside the artifact's directory; rename it", store, key)
	}
	return rel, nil
}
