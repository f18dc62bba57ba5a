package wrapper

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/archive"
)

// ParameterPath is where the wrapper copies main's output parameter file p
// under root: outputs/parameters/p (Argo's layout, EMC:290).
func ParameterPath(root, p string) string {
	return filepath.Join(root, "outputs", "parameters", filepath.Clean("/"+p))
}

// ArtifactPath is where the wrapper writes main's output artifact p under
// root as a .tgz: outputs/artifacts/p.tgz (Argo's layout, EMC:256).
func ArtifactPath(root, p string) string {
	return filepath.Join(root, "outputs", "artifacts", filepath.Clean("/"+strings.TrimSuffix(p, "/"))+".tgz")
}

// saveOutputs copies main's output parameters and artifacts that are not on
// a user volume (wait reads those from its mirror) to root/outputs. A
// missing source is skipped: wait then finds none and applies the default
// or the artifact's optional flag.
func saveOutputs(ctx context.Context, root string, t *workflow.Template, log *logrus.Entry) error {
	mounts := volumeMounts(t)
	var errs []error
	for _, p := range t.Outputs.Parameters {
		if p.ValueFrom == nil || p.ValueFrom.Path == "" || onVolume(mounts, p.ValueFrom.Path) {
			continue
		}
		if err := saveParameter(root, p.ValueFrom.Path); err != nil {
			errs = append(errs, fmt.Errorf("output parameter %q: %w", p.Name, err))
		}
	}
	for _, a := range t.Outputs.Artifacts {
		if a.Path == "" || onVolume(mounts, a.Path) {
			continue
		}
		level := gzip.DefaultCompression
		if a.Archive != nil && a.Archive.Tar != nil && a.Archive.Tar.CompressionLevel != nil {
			level = int(*a.Archive.Tar.CompressionLevel)
		}
		if err := saveArtifact(ctx, root, a.Path, level); err != nil {
			errs = append(errs, fmt.Errorf("output artifact %q: %w", a.Name, err))
		}
	}
	if len(errs) == 0 {
		log.Debug("outputs saved")
	}
	return errors.Join(errs...)
}

func volumeMounts(t *workflow.Template) []corev1.VolumeMount {
	switch {
	case t.Container != nil:
		return t.Container.VolumeMounts
	case t.Script != nil:
		return t.Script.VolumeMounts
	case t.ContainerSet != nil:
		return t.ContainerSet.VolumeMounts
	}
	return nil
}

// onVolume is Argo's FindOverlappingVolume (workflow/common/util.go:35).
func onVolume(mounts []corev1.VolumeMount, p string) bool {
	for _, m := range mounts {
		mp := strings.TrimRight(m.MountPath, "/")
		if p == mp || strings.HasPrefix(p, mp+"/") {
			return true
		}
	}
	return false
}

func saveParameter(root, src string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	if st, err := in.Stat(); err == nil && st.IsDir() {
		return nil // wait says that a parameter must be a file
	}
	dst := ParameterPath(root, src)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Close()
}

func saveArtifact(ctx context.Context, root, src string, level int) error {
	src = path.Clean(src)
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	dst := ArtifactPath(root, src)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = archive.Create(ctx, path.Dir(src), path.Base(src), out, level)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("archive %s: %w", src, err)
	}
	return os.Rename(tmp, dst)
}
