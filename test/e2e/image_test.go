//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argoexec/argoexec/pkg/version"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// TestImage reads the images hack/images.sh built from the Dockerfile (the executor image and
// its -argo variant, as dockerd holds them: `docker save`) and checks what they hold and how
// they run: the default target only the three binaries and the CA bundle, the argo target those
// plus a static busybox as sh and pidof; every binary a static ELF executable for this machine's
// architecture, owned by root, mode 0755; the CA bundle 0644; user 8737:8737, entrypoint
// /bin/argoexec, PATH=/bin, working directory /.
func TestImage(t *testing.T) {
	env := framework.LoadEnv()
	d := framework.NewDocker(env.DockerSock)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("dockerd at %s: %v (hack/cluster.sh up starts it)", env.DockerSock, err)
	}
	argoRef := env.ExecutorImage + "-argo" // hack/images.sh's name for the argo target
	if !strings.Contains(path.Base(env.ExecutorImage), ":") {
		argoRef = env.ExecutorImage + ":latest-argo"
	}
	want := map[string][]string{
		"default": {"bin/", "bin/argoexec", "bin/argoexec-main", "bin/argoexec-step",
			"etc/", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt"},
	}
	want["argo"] = slices.Sorted(slices.Values(append(slices.Clone(want["default"]), "bin/busybox", "bin/pidof -> busybox", "bin/sh -> busybox")))
	wantConfig := imageConfig{User: "8737:8737", Env: []string{"PATH=/bin"}, Entrypoint: []string{"/bin/argoexec"}, WorkingDir: "/"}
	for _, tc := range []struct{ target, ref string }{{"default", env.ExecutorImage}, {"argo", argoRef}} {
		t.Run(tc.target, func(t *testing.T) {
			img, err := dockerSave(ctx, d, tc.ref)
			if err != nil {
				t.Fatalf("%v (hack/images.sh argoexec builds %s)", err, tc.ref)
			}
			if diff := cmp.Diff(wantConfig, img.config); diff != "" {
				t.Errorf("%s: image config (-want +got):\n%s", tc.ref, diff)
			}
			var paths []string
			for p, e := range img.files {
				if e.link != "" {
					p += " -> " + e.link
				}
				paths = append(paths, p)
				if e.uid != 0 || e.gid != 0 {
					t.Errorf("%s: %s owned by %d:%d, want 0:0", tc.ref, p, e.uid, e.gid)
				}
				switch {
				case e.typ == tar.TypeReg && strings.HasPrefix(p, "bin/"):
					if e.mode != 0o755 {
						t.Errorf("%s: %s mode %o, want 755", tc.ref, p, e.mode)
					}
					if e.elf != "static "+runtime.GOARCH {
						t.Errorf("%s: %s is %q, want a static ELF executable for %s", tc.ref, p, e.elf, runtime.GOARCH)
					}
				case e.typ == tar.TypeReg && e.mode != 0o644:
					t.Errorf("%s: %s mode %o, want 644", tc.ref, p, e.mode)
				}
			}
			slices.Sort(paths)
			if diff := cmp.Diff(want[tc.target], paths); diff != "" {
				t.Errorf("what %s holds (-want +got):\n%s", tc.ref, diff)
			}
			t.Logf("%s: %d entries, user %s, entrypoint %q, env %q", tc.ref, len(img.files), img.config.User, img.config.Entrypoint, img.config.Env)
			// the binary runs in the image and was stamped (VERSION and COMMIT build arguments)
			out := runImage(ctx, t, d, framework.ContainerSpec{Image: tc.ref, Cmd: []string{"version"}})
			if !strings.HasPrefix(out, "argoexec v") || strings.Contains(out, version.DevVersion) || strings.Contains(out, "unknown") ||
				!strings.Contains(out, "linux/"+runtime.GOARCH) {
				t.Errorf("%s: `argoexec version` printed %q, want a stamped version and commit for linux/%s", tc.ref, out, runtime.GOARCH)
			}
			if tc.target == "argo" { // what Argo's controller runs in wait, in its shape
				out := runImage(ctx, t, d, framework.ContainerSpec{Image: tc.ref, Entrypoint: []string{"sh", "-c", "pidof sh && echo shell ok"}})
				if !strings.HasSuffix(strings.TrimSpace(out), "shell ok") {
					t.Errorf("%s: sh -c 'pidof sh' printed %q", tc.ref, out)
				}
			}
		})
	}
}

// runImage runs a container of spec (no network) to its end and returns its output; a non-zero
// exit fails the test.
func runImage(ctx context.Context, t *testing.T, d *framework.Docker, spec framework.ContainerSpec) string {
	t.Helper()
	ref, args := spec.Image, append(slices.Clone(spec.Entrypoint), spec.Cmd...)
	id, err := d.CreateContainer(ctx, "", spec)
	if err != nil {
		t.Fatalf("create a container of %s: %v", ref, err)
	}
	defer func() { _ = d.RemoveContainer(context.Background(), id) }()
	if err := d.StartContainer(ctx, id); err != nil {
		t.Fatalf("start %s: %v", ref, err)
	}
	code, err := d.WaitContainer(ctx, id)
	out, _ := d.ContainerLogs(ctx, id, 0)
	if err != nil || code != 0 {
		t.Fatalf("%s %q: exit %d, %v\n%s", ref, args, code, err, out)
	}
	return out
}

// imageConfig is the part of an image's config that decides how it runs.
type imageConfig struct {
	User       string
	Env        []string
	Entrypoint []string
	Cmd        []string
	WorkingDir string
}

// fileEntry is one path of an image's merged filesystem.
type fileEntry struct {
	typ      byte
	mode     int64
	uid, gid int
	size     int64
	link     string
	elf      string // a regular ELF file: "static ARCH" or "dynamic ARCH" (GOARCH names); else ""
}

// elfArch names an ELF machine as GOARCH does.
var elfArch = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}

// elfKind is fileEntry.elf for b: "" when b is not an ELF file.
func elfKind(b []byte) string {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	kind := "static"
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			kind = "dynamic"
		}
	}
	arch, ok := elfArch[f.Machine]
	if !ok {
		arch = f.Machine.String()
	}
	return kind + " " + arch
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
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			e.size, e.elf = int64(len(b)), elfKind(b)
		}
		files[p] = e
	}
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
