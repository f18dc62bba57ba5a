// Command ociimage turns one `docker save` tarball per architecture into one multi-platform OCI
// image layout (an image index over one manifest per platform), and checks such a layout's
// binaries. No registry and no Docker is needed for either. hack/image.sh (`make image`) runs
// both on the images it builds from the Dockerfile:
//
//	ociimage layout -o DIR [-tar FILE] -name REF ARCH=SAVED.tar...
//	ociimage check [-require PATH]... LAYOUT
//
// layout writes DIR as an OCI image layout whose index.json names one image index, annotated
// with REF (io.containerd.image.name, and its tag as org.opencontainers.image.ref.name), over
// one manifest per ARCH (linux/ARCH): the saved image's config as it is (so a manifest's config
// digest is the image ID Docker showed) and its layers gzip-compressed. -tar also writes the
// layout as one tarball (`skopeo copy oci-archive:FILE ...`, `ctr images import`, `docker load`
// on Docker >= 25). The same inputs give the same bytes.
//
// check reads a layout (a directory or its tarball), verifies every blob's digest and size,
// and for each platform manifest checks that every ELF file under bin/ is a static executable
// for the manifest's architecture (e_machine, no PT_INTERP) and that each -require path exists
// (default bin/argoexec). It prints one line per platform and fails on the first mismatch.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// OCI media types (image-spec v1.0).
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayerGz  = "application/vnd.oci.image.layer.v1.tar+gzip"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: ociimage layout|check ... (see the package doc)")
	}
	switch args[0] {
	case "layout":
		fs := flag.NewFlagSet("layout", flag.ContinueOnError)
		out := fs.String("o", "", "the OCI layout directory to write (replaced)")
		tarball := fs.String("tar", "", "also write the layout as this tarball")
		name := fs.String("name", "", "the image reference the index is annotated with, e.g. argoexec:v0.1.0")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *out == "" || *name == "" || fs.NArg() == 0 {
			return errors.New("layout: -o DIR -name REF ARCH=SAVED.tar... are required")
		}
		var inputs []input
		for _, a := range fs.Args() {
			arch, file, ok := strings.Cut(a, "=")
			if !ok || arch == "" || file == "" {
				return fmt.Errorf("layout: %q is not ARCH=SAVED.tar", a)
			}
			inputs = append(inputs, input{arch: arch, file: file})
		}
		l, err := buildLayout(*name, inputs)
		if err != nil {
			return err
		}
		if err := l.writeDir(*out); err != nil {
			return err
		}
		if *tarball != "" {
			if err := l.writeTar(*tarball); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "%s: OCI image index %s over %s\n", *name, l.indexDigest, strings.Join(l.platforms, ", "))
		return nil
	case "check":
		fs := flag.NewFlagSet("check", flag.ContinueOnError)
		var require stringList
		fs.Var(&require, "require", "a path each platform's image must hold (repeatable; default bin/argoexec)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("check: one LAYOUT (directory or tarball)")
		}
		if len(require) == 0 {
			require = stringList{"bin/argoexec"}
		}
		return check(fs.Arg(0), require, stdout)
	}
	return fmt.Errorf("unknown command %q: layout or check", args[0])
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type input struct{ arch, file string }

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// layout is an OCI image layout in memory: blobs by digest, and index.json.
type layout struct {
	blobs       map[string][]byte
	indexJSON   []byte
	indexDigest string
	platforms   []string
}

func (l *layout) add(b []byte) descriptor {
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	l.blobs[d] = b
	return descriptor{Digest: d, Size: int64(len(b))}
}

// buildLayout reads each input's single image and assembles the index over them.
func buildLayout(name string, inputs []input) (*layout, error) {
	l := &layout{blobs: map[string][]byte{}}
	var platformIndex index
	platformIndex.SchemaVersion, platformIndex.MediaType = 2, mediaTypeIndex
	seen := map[string]bool{}
	for _, in := range inputs {
		if seen[in.arch] {
			return nil, fmt.Errorf("layout: architecture %s given twice", in.arch)
		}
		seen[in.arch] = true
		m, err := l.addSaved(in)
		if err != nil {
			return nil, err
		}
		mb, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		d := l.add(mb)
		d.MediaType, d.Platform = mediaTypeManifest, &platform{Architecture: in.arch, OS: "linux"}
		platformIndex.Manifests = append(platformIndex.Manifests, d)
		l.platforms = append(l.platforms, "linux/"+in.arch)
	}
	ib, err := json.Marshal(platformIndex)
	if err != nil {
		return nil, err
	}
	d := l.add(ib)
	d.MediaType = mediaTypeIndex
	ref := normalizeRef(name)
	d.Annotations = map[string]string{
		"io.containerd.image.name":          ref,
		"org.opencontainers.image.ref.name": ref[strings.LastIndex(ref, ":")+1:],
	}
	l.indexDigest = d.Digest
	top := index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{d}}
	if l.indexJSON, err = json.MarshalIndent(top, "", "  "); err != nil {
		return nil, err
	}
	return l, nil
}

// addSaved adds one `docker save` tarball's image (exactly one) and returns its manifest.
func (l *layout) addSaved(in input) (*manifest, error) {
	files, err := readTar(in.file)
	if err != nil {
		return nil, err
	}
	var saved []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &saved); err != nil {
		return nil, fmt.Errorf("%s: manifest.json: %w (not a docker save tarball?)", in.file, err)
	}
	if len(saved) != 1 {
		return nil, fmt.Errorf("%s: %d images, want exactly one", in.file, len(saved))
	}
	cfgBytes, ok := files[path.Clean(saved[0].Config)]
	if !ok {
		return nil, fmt.Errorf("%s: config %s missing", in.file, saved[0].Config)
	}
	var cfg struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		RootFS       struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		return nil, fmt.Errorf("%s: config: %w", in.file, err)
	}
	if cfg.Architecture != in.arch || cfg.OS != "linux" {
		return nil, fmt.Errorf("%s: the image is %s/%s, not linux/%s", in.file, cfg.OS, cfg.Architecture, in.arch)
	}
	if len(cfg.RootFS.DiffIDs) != len(saved[0].Layers) {
		return nil, fmt.Errorf("%s: %d layers but %d diff_ids", in.file, len(saved[0].Layers), len(cfg.RootFS.DiffIDs))
	}
	m := &manifest{SchemaVersion: 2, MediaType: mediaTypeManifest}
	m.Config = l.add(cfgBytes)
	m.Config.MediaType = mediaTypeConfig
	for i, name := range saved[0].Layers {
		raw, ok := files[path.Clean(name)]
		if !ok {
			return nil, fmt.Errorf("%s: layer %s missing", in.file, name)
		}
		if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != cfg.RootFS.DiffIDs[i] {
			return nil, fmt.Errorf("%s: layer %s is not the config's diff_id %s", in.file, name, cfg.RootFS.DiffIDs[i])
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz) // no name, mtime 0: the same layer gives the same blob
		if _, err := zw.Write(raw); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		d := l.add(gz.Bytes())
		d.MediaType = mediaTypeLayerGz
		m.Layers = append(m.Layers, d)
	}
	return m, nil
}

// normalizeRef is the name containerd stores: argoexec:v1 -> docker.io/library/argoexec:v1.
func normalizeRef(r string) string {
	first, _, hasSlash := strings.Cut(r, "/")
	switch {
	case !hasSlash:
		r = "docker.io/library/" + r
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		r = "docker.io/" + r
	}
	if !strings.Contains(path.Base(r), ":") {
		r += ":latest"
	}
	return r
}

// entry is one file of a layout, by its path in the layout.
type entry struct {
	name string
	data []byte
}

// entries are the layout's files in a fixed order: oci-layout, index.json, the blobs sorted.
func (l *layout) entries() []entry {
	out := []entry{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", l.indexJSON},
	}
	for _, d := range slices.Sorted(maps.Keys(l.blobs)) {
		out = append(out, entry{"blobs/sha256/" + strings.TrimPrefix(d, "sha256:"), l.blobs[d]})
	}
	return out
}

func (l *layout) writeDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for _, e := range l.entries() {
		p := filepath.Join(dir, filepath.FromSlash(e.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, e.data, 0o644); err != nil {
			return fmt.Errorf("write layout: %w", err)
		}
	}
	return nil
}

func (l *layout) writeTar(file string) error {
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	hdr := func(name string, typ byte, mode, size int64) error {
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, Format: tar.FormatPAX})
	}
	err = errors.Join(hdr("blobs/", tar.TypeDir, 0o755, 0), hdr("blobs/sha256/", tar.TypeDir, 0o755, 0))
	for _, e := range l.entries() {
		if err != nil {
			break
		}
		if err = hdr(e.name, tar.TypeReg, 0o644, int64(len(e.data))); err == nil {
			_, err = tw.Write(e.data)
		}
	}
	if err = errors.Join(err, tw.Close(), f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", file, err)
	}
	return os.Rename(tmp, file)
}

// readTar reads a whole tarball's regular files by cleaned name.
func readTar(file string) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read %s: %s: %w", file, h.Name, err)
		}
		files[path.Clean(h.Name)] = b
	}
}

// elfMachines are the architectures an image may be built for and their ELF e_machine.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// check verifies the layout at file (a directory or a tarball); see the package doc.
func check(file string, require []string, stdout io.Writer) error {
	var blobs map[string][]byte
	if fi, err := os.Stat(file); err != nil {
		return err
	} else if fi.IsDir() {
		blobs = map[string][]byte{}
		for _, name := range []string{"index.json", "oci-layout"} {
			b, err := os.ReadFile(filepath.Join(file, name))
			if err != nil {
				return fmt.Errorf("%s: not an OCI layout: %w", file, err)
			}
			blobs[name] = b
		}
		ents, err := os.ReadDir(filepath.Join(file, "blobs", "sha256"))
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(file, "blobs", "sha256", e.Name()))
			if err != nil {
				return err
			}
			blobs["blobs/sha256/"+e.Name()] = b
		}
	} else if blobs, err = readTar(file); err != nil {
		return err
	}
	blob := func(d descriptor, wantType string) ([]byte, error) {
		if d.MediaType != wantType {
			return nil, fmt.Errorf("%s: media type %q, want %q", d.Digest, d.MediaType, wantType)
		}
		b, ok := blobs["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok {
			return nil, fmt.Errorf("blob %s missing", d.Digest)
		}
		sum := sha256.Sum256(b)
		if "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || int64(len(b)) != d.Size {
			return nil, fmt.Errorf("blob %s: content does not match its digest or size", d.Digest)
		}
		return b, nil
	}
	var top index
	if err := json.Unmarshal(blobs["index.json"], &top); err != nil {
		return fmt.Errorf("%s: index.json: %w", file, err)
	}
	if len(top.Manifests) != 1 {
		return fmt.Errorf("%s: index.json lists %d entries, want one image index", file, len(top.Manifests))
	}
	ib, err := blob(top.Manifests[0], mediaTypeIndex)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var idx index
	if err := json.Unmarshal(ib, &idx); err != nil {
		return fmt.Errorf("%s: image index: %w", file, err)
	}
	if len(idx.Manifests) == 0 {
		return fmt.Errorf("%s: the image index lists no platform", file)
	}
	name := top.Manifests[0].Annotations["io.containerd.image.name"]
	for _, md := range idx.Manifests {
		if md.Platform == nil || md.Platform.OS != "linux" {
			return fmt.Errorf("%s: manifest %s has no linux platform", file, md.Digest)
		}
		arch := md.Platform.Architecture
		want, ok := elfMachines[arch]
		if !ok {
			return fmt.Errorf("%s: architecture %q unknown", file, arch)
		}
		mb, err := blob(md, mediaTypeManifest)
		if err != nil {
			return fmt.Errorf("%s: linux/%s: %w", file, arch, err)
		}
		var m manifest
		if err := json.Unmarshal(mb, &m); err != nil {
			return fmt.Errorf("%s: linux/%s manifest: %w", file, arch, err)
		}
		cb, err := blob(m.Config, mediaTypeConfig)
		if err != nil {
			return fmt.Errorf("%s: linux/%s: %w", file, arch, err)
		}
		var cfg platform
		if err := json.Unmarshal(cb, &cfg); err != nil || cfg.Architecture != arch || cfg.OS != "linux" {
			return fmt.Errorf("%s: linux/%s: the config says %s/%s (%v)", file, arch, cfg.OS, cfg.Architecture, err)
		}
		seen := map[string]bool{}
		var elves []string
		for _, ld := range m.Layers {
			lb, err := blob(ld, mediaTypeLayerGz)
			if err != nil {
				return fmt.Errorf("%s: linux/%s: %w", file, arch, err)
			}
			found, err := checkLayer(lb, want, seen)
			if err != nil {
				return fmt.Errorf("%s: linux/%s: %w", file, arch, err)
			}
			elves = append(elves, found...)
		}
		for _, r := range require {
			if !seen[path.Clean(r)] {
				return fmt.Errorf("%s: linux/%s: %s missing", file, arch, r)
			}
		}
		slices.Sort(elves)
		fmt.Fprintf(stdout, "%s linux/%s: %s static %s\n", name, arch, strings.Join(elves, " "), want)
	}
	return nil
}

// checkLayer reads one gzip layer: every path into seen, and every ELF file under bin/ must be
// a static executable for want. It returns the ELF files' paths.
func checkLayer(gz []byte, want elf.Machine, seen map[string]bool) ([]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	var elves []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return elves, nil
		}
		if err != nil {
			return nil, err
		}
		p := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		seen[p] = true
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(p, "bin/") {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(b, []byte(elf.ELFMAG)) {
			continue
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if f.Machine != want {
			return nil, fmt.Errorf("%s is built for %s, not %s", p, f.Machine, want)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return nil, fmt.Errorf("%s is dynamically linked (PT_INTERP)", p)
			}
		}
		elves = append(elves, p)
	}
}
