//go:build e2e

package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// TestDockerfileMatchesImagesSh builds the Dockerfile's two targets on the
// testbed's dockerd from the context hack/images.sh prepares (FROM scratch:
// nothing is pulled) and checks that each equals the image hack/images.sh
// packs without Docker from the same context: the same files (path, type,
// mode, owner, size, content, link target), user, entrypoint, env and
// working directory. So the Dockerfile cannot drift from the images the
// tests run. It also checks what the images hold: the default one only the
// binaries and the CA bundle, the argo one those plus busybox as sh and pidof.
func TestDockerfileMatchesImagesSh(t *testing.T) {
	env := framework.LoadEnv()
	d := framework.NewDocker(env.DockerSock)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("dockerd at %s: %v (hack/cluster.sh up starts it)", env.DockerSock, err)
	}
	dir := t.TempDir()
	const ref = "argoexec:dockerfile-check"
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(), "hack", "images.sh"), "--to", "none", "argoexec")
	cmd.Env = append(os.Environ(), "ARGOEXEC_IMAGES_DIR="+dir, "ARGOEXEC_DEV_IMAGE="+ref)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/images.sh --to none argoexec: %v\n%s", err, out)
	}
	name := "argoexec-argoexec-dockerfile-check"
	buildCtx, err := contextTar(filepath.Join(dir, name+".context"), filepath.Join(repoRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"default": {"bin/", "bin/argoexec", "bin/argoexec-main", "bin/argoexec-step",
			"etc/", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt"},
	}
	want["argo"] = slices.Sorted(slices.Values(append(slices.Clone(want["default"]), "bin/busybox", "bin/pidof -> busybox", "bin/sh -> busybox")))
	for _, tc := range []struct{ target, tarball string }{
		{"default", name + ".tar"},
		{"argo", name + "-argo.tar"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			tag := "argoexec:dockerfile-built-" + tc.target
			start := time.Now()
			if err := dockerBuild(ctx, d, buildCtx, tc.target, tag); err != nil {
				t.Fatal(err)
			}
			t.Logf("docker build --target %s: %s", tc.target, time.Since(start).Round(time.Millisecond))
			t.Cleanup(func() { _ = d.Do(context.Background(), "DELETE", "/images/"+tag, url.Values{"force": {"1"}}, nil, nil) })
			built, err := dockerSave(ctx, d, tag)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(dir, tc.tarball))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			packed, err := readImage(f)
			if err != nil {
				t.Fatalf("%s: %v", tc.tarball, err)
			}
			if diff := cmp.Diff(packed.config, built.config); diff != "" {
				t.Errorf("image config (-images.sh +Dockerfile):\n%s", diff)
			}
			if diff := cmp.Diff(packed.files, built.files, cmp.AllowUnexported(fileEntry{})); diff != "" {
				t.Errorf("files (-images.sh +Dockerfile):\n%s", diff)
			}
			var paths []string
			for p, e := range built.files {
				if e.link != "" {
					p += " -> " + e.link
				}
				paths = append(paths, p)
			}
			slices.Sort(paths)
			if diff := cmp.Diff(want[tc.target], paths); diff != "" {
				t.Errorf("what the %s image holds (-want +got):\n%s", tc.target, diff)
			}
			t.Logf("%s: %d entries, user %s, entrypoint %q, env %q", tc.target, len(built.files), built.config.User, built.config.Entrypoint, built.config.Env)
		})
	}
}

// imageConfig is the part of an image's config that decides how it runs.
type imageConfig struct {
	User       string
	Env        []string
	Entrypoint []string
	Cmd        []string
	WorkingDir string
}

// fileEntry is one path of an image's merged filesystem (mtimes left out:
// images.sh packs with mtime 0, docker keeps the context's).
type fileEntry struct {
	typ      byte
	mode     int64
	uid, gid int
	size     int64
	sum      string
	link     string
}

type image struct {
	config imageConfig
	files  map[string]fileEntry
}

// readImage reads a `docker save` tarball (one image): its config and its
// layers applied in order (no whiteouts: these images only add files).
func readImage(r io.Reader) (*image, error) {
	blobs := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read image tarball: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			blobs[path.Clean(h.Name)] = b
		}
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(blobs["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		return nil, fmt.Errorf("manifest.json: %v (%d images)", err, len(manifest))
	}
	var cfg struct {
		Config imageConfig `json:"config"`
	}
	if err := json.Unmarshal(blobs[manifest[0].Config], &cfg); err != nil {
		return nil, fmt.Errorf("config %s: %w", manifest[0].Config, err)
	}
	img := &image{config: cfg.Config, files: map[string]fileEntry{}}
	for _, l := range manifest[0].Layers {
		if err := applyLayer(img.files, blobs[path.Clean(l)]); err != nil {
			return nil, fmt.Errorf("layer %s: %w", l, err)
		}
	}
	return img, nil
}

func applyLayer(files map[string]fileEntry, layer []byte) error {
	var r io.Reader = bytes.NewReader(layer)
	if len(layer) > 2 && layer[0] == 0x1f && layer[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if p == "" {
			continue // the root directory itself
		}
		if strings.HasPrefix(path.Base(p), ".wh.") {
			return fmt.Errorf("whiteout %s: unexpected in these images", p)
		}
		e := fileEntry{typ: h.Typeflag, mode: h.Mode & 0o7777, uid: h.Uid, gid: h.Gid, link: h.Linkname}
		if h.Typeflag == tar.TypeDir {
			p += "/"
		}
		if h.Typeflag == tar.TypeReg {
			s := sha256.New()
			n, err := io.Copy(s, tr)
			if err != nil {
				return err
			}
			e.size, e.sum = n, hex.EncodeToString(s.Sum(nil))
		}
		files[p] = e
	}
}

// contextTar is the build context dir (symlinks kept as links) with the
// Dockerfile added at its root.
func contextTar(dir, dockerfile string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var link string
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Name = filepath.ToSlash(rel)
		if de.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", dir, err)
	}
	df, err := os.ReadFile(dockerfile)
	if err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(df); err != nil {
		return nil, err
	}
	return buf.Bytes(), tw.Close()
}

// dockerBuild runs `docker build --target target -t tag` on the context
// (the classic builder of dockerd 20.10's API) and fails on any error line.
func dockerBuild(ctx context.Context, d *framework.Docker, buildCtx []byte, target, tag string) error {
	q := url.Values{"t": {tag}, "target": {target}, "rm": {"1"}, "forcerm": {"1"}, "pull": {"0"}}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://docker/"+framework.DockerAPIVersion+"/build?"+q.Encode(), bytes.NewReader(buildCtx))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("docker build --target %s: %w", target, err)
	}
	defer resp.Body.Close()
	var log strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m struct {
			Stream, Error string
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			log.WriteString(m.Stream)
			if m.Error != "" {
				return fmt.Errorf("docker build --target %s: %s\n%s", target, m.Error, log.String())
			}
		}
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("docker build --target %s: HTTP %d\n%s", target, resp.StatusCode, log.String())
	}
	return sc.Err()
}

// dockerSave reads the image as `docker save` writes it.
func dockerSave(ctx context.Context, d *framework.Docker, tag string) (*image, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://docker/"+framework.DockerAPIVersion+"/images/"+url.PathEscape(tag)+"/get", nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("docker save %s: %w", tag, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("docker save %s: HTTP %d: %s", tag, resp.StatusCode, b)
	}
	img, err := readImage(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("docker save %s: %w", tag, err)
	}
	return img, nil
}
