package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeELF is a 64-bit little-endian ELF header for machine, with one PT_INTERP program
// header when dynamic: enough for debug/elf.
func fakeELF(machine elf.Machine, dynamic bool) []byte {
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0})
	b.Write(make([]byte, 8))
	phnum, phoff := uint16(0), uint64(0)
	if dynamic {
		phnum, phoff = 1, 64
	}
	for _, v := range []any{uint16(elf.ET_EXEC), uint16(machine), uint32(1), uint64(0), phoff, uint64(0),
		uint32(0), uint16(64), uint16(56), phnum, uint16(64), uint16(0), uint16(0)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	if dynamic {
		for _, v := range []any{uint32(elf.PT_INTERP), uint32(4), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(1)} {
			_ = binary.Write(&b, binary.LittleEndian, v)
		}
	}
	return b.Bytes()
}

func tarOf(t *testing.T, files map[string][]byte, order []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range order {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// saved writes a docker-save tarball of one image for arch whose one layer holds files.
func saved(t *testing.T, dir, arch string, files map[string][]byte) string {
	t.Helper()
	var order []string
	for n := range files {
		order = append(order, n)
	}
	layer := tarOf(t, files, order)
	sum := sha256.Sum256(layer)
	diff := hex.EncodeToString(sum[:])
	cfg := []byte(fmt.Sprintf(`{"architecture":%q,"os":"linux","config":{"User":"8737:8737"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}`, arch, diff))
	csum := sha256.Sum256(cfg)
	id := hex.EncodeToString(csum[:])
	man := []byte(fmt.Sprintf(`[{"Config":"%s.json","RepoTags":["argoexec:t"],"Layers":["%s/layer.tar"]}]`, id, diff))
	out := tarOf(t, map[string][]byte{diff + "/layer.tar": layer, id + ".json": cfg, "manifest.json": man},
		[]string{diff + "/layer.tar", id + ".json", "manifest.json"})
	p := filepath.Join(dir, arch+"-"+id[:8]+".tar")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLayoutAndCheck(t *testing.T) {
	dir := t.TempDir()
	good := func(arch string, m elf.Machine) string {
		return saved(t, dir, arch, map[string][]byte{
			"bin/argoexec": fakeELF(m, false), "bin/busybox": fakeELF(m, false),
			"etc/ssl/certs/ca-certificates.crt": []byte("not an ELF file"),
		})
	}
	amd, arm := good("amd64", elf.EM_X86_64), good("arm64", elf.EM_AARCH64)
	out := filepath.Join(dir, "layout")
	tarball := filepath.Join(dir, "layout.tar")
	var stdout bytes.Buffer
	if err := run([]string{"layout", "-o", out, "-tar", tarball, "-name", "argoexec:v1", "amd64=" + amd, "arm64=" + arm}, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "linux/amd64, linux/arm64") {
		t.Errorf("layout printed %q", stdout.String())
	}
	for _, l := range []string{out, tarball} {
		stdout.Reset()
		if err := run([]string{"check", "-require", "bin/busybox", l}, &stdout); err != nil {
			t.Fatalf("check %s: %v", l, err)
		}
		want := "docker.io/library/argoexec:v1 linux/amd64: bin/argoexec bin/busybox static EM_X86_64\n" +
			"docker.io/library/argoexec:v1 linux/arm64: bin/argoexec bin/busybox static EM_AARCH64\n"
		if stdout.String() != want {
			t.Errorf("check %s printed\n%s\nwant\n%s", l, stdout.String(), want)
		}
	}
	if err := run([]string{"check", "-require", "bin/sh", out}, &stdout); err == nil || !strings.Contains(err.Error(), "bin/sh missing") {
		t.Errorf("check -require bin/sh: %v, want bin/sh missing", err)
	}

	// the same inputs give the same bytes
	first, err := os.ReadFile(tarball)
	if err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"layout", "-o", out, "-tar", tarball, "-name", "argoexec:v1", "amd64=" + amd, "arm64=" + arm}, &stdout); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(tarball); !bytes.Equal(first, second) {
		t.Error("two layouts of the same inputs differ")
	}

	// a corrupt blob is found
	blobs, _ := filepath.Glob(filepath.Join(out, "blobs", "sha256", "*"))
	for _, b := range blobs {
		if data, _ := os.ReadFile(b); bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			if err := os.WriteFile(b, append(data, 0), 0o644); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if err := run([]string{"check", out}, &stdout); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("check of a corrupt layer: %v, want a digest mismatch", err)
	}
}

func TestCheckRefusesWrongBinaries(t *testing.T) {
	for _, tc := range []struct {
		name string
		bin  []byte
		want string
	}{
		{"amd64 binary in the arm64 image", fakeELF(elf.EM_X86_64, false), "bin/argoexec is built for EM_X86_64, not EM_AARCH64"},
		{"dynamic binary", fakeELF(elf.EM_AARCH64, true), "bin/argoexec is dynamically linked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			arm := saved(t, dir, "arm64", map[string][]byte{"bin/argoexec": tc.bin})
			out := filepath.Join(dir, "layout")
			var stdout bytes.Buffer
			if err := run([]string{"layout", "-o", out, "-name", "argoexec:v1", "arm64=" + arm}, &stdout); err != nil {
				t.Fatal(err)
			}
			err := run([]string{"check", out}, &stdout)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLayoutRefusesMismatchedArchitecture(t *testing.T) {
	dir := t.TempDir()
	amd := saved(t, dir, "amd64", map[string][]byte{"bin/argoexec": fakeELF(elf.EM_X86_64, false)})
	var stdout bytes.Buffer
	err := run([]string{"layout", "-o", filepath.Join(dir, "l"), "-name", "argoexec:v1", "arm64=" + amd}, &stdout)
	if err == nil || !strings.Contains(err.Error(), "the image is linux/amd64, not linux/arm64") {
		t.Errorf("layout: %v, want the architecture mismatch named", err)
	}
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"argoexec":                 "docker.io/library/argoexec:latest",
		"argoexec:v1":              "docker.io/library/argoexec:v1",
		"me/argoexec:v1":           "docker.io/me/argoexec:v1",
		"ghcr.io/me/argoexec:v1":   "ghcr.io/me/argoexec:v1",
		"localhost:5000/argoexec":  "localhost:5000/argoexec:latest",
		"localhost/argoexec:v1-rc": "localhost/argoexec:v1-rc",
	} {
		if got := normalizeRef(in); got != want {
			t.Errorf("normalizeRef(%q) = %q, want %q", in, got, want)
		}
	}
}
