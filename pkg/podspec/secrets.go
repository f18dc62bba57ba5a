package podspec

import (
	"fmt"
	"maps"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// The secrets of the stores whose artifacts name their own credentials
// (git, artifactory, oss) reach init and wait as Argo's controller mounts
// them: the key KEY of secret NAME is the file
// workflow.ArgoSecretsPath/NAME/KEY, which the executor's drivers (and the
// git cloner it runs) read. Each container gets only the keys its own
// artifacts name: init those of the inputs, wait those of the outputs and
// of the repository it saves to; main none. The s3 and gcs repository's
// keys stay in the environment (executorEnv).

// secretKeys is, per secret name, the keys a container reads.
type secretKeys map[string][]string

func (s secretKeys) add(sels ...*corev1.SecretKeySelector) {
	for _, sel := range sels {
		if sel == nil || sel.Name == "" || sel.Key == "" || slices.Contains(s[sel.Name], sel.Key) {
			continue
		}
		s[sel.Name] = append(s[sel.Name], sel.Key)
	}
}

// fileSecrets are the secret keys a location of a store that reads secret
// files names (git, artifactory, oss); an s3 or gcs location names none
// here, since their repository's keys come from the environment.
func fileSecrets(l workflow.ArtifactLocation) []*corev1.SecretKeySelector {
	var out []*corev1.SecretKeySelector
	if g := l.Git; g != nil {
		out = append(out, g.UsernameSecret, g.PasswordSecret, g.SSHPrivateKeySecret)
	}
	if a := l.Artifactory; a != nil {
		out = append(out, a.UsernameSecret, a.PasswordSecret)
	}
	if o := l.OSS; o != nil {
		out = append(out, o.AccessKeySecret, o.SecretKeySecret)
	}
	return slices.DeleteFunc(out, func(s *corev1.SecretKeySelector) bool { return s == nil || s.Name == "" })
}

// repositoryFileSecrets are the secret keys of the ConfigMap's artifactory
// or oss repository.
func repositoryFileSecrets(r workflow.ArtifactRepository) []*corev1.SecretKeySelector {
	var out []*corev1.SecretKeySelector
	if a := r.Artifactory; a != nil {
		out = append(out, a.UsernameSecret, a.PasswordSecret)
	}
	if o := r.OSS; o != nil {
		out = append(out, o.AccessKeySecret, o.SecretKeySecret)
	}
	return out
}

// initSecrets are the secret keys init reads: those the inputs name, and
// the repository's when an input of the repository's kind names none of
// its own (the driver then takes the repository's, as Argo's Relocate).
func (b *builder) initSecrets() secretKeys {
	s := secretKeys{}
	repo := b.cfg.ArtifactRepository
	for _, a := range b.tmpl.Inputs.Artifacts {
		own := fileSecrets(a.Location())
		s.add(own...)
		if len(own) == 0 && (a.Artifactory != nil && repo.Artifactory != nil || a.OSS != nil && repo.OSS != nil) {
			s.add(repositoryFileSecrets(repo)...)
		}
	}
	return s
}

// waitSecrets are the secret keys wait reads: those the outputs name, and
// the repository's when wait saves there (an output without a location of
// its own, one of the repository's kind without secrets, or main's log).
func (b *builder) waitSecrets() secretKeys {
	s := secretKeys{}
	repo := b.cfg.ArtifactRepository
	toRepo := b.tmpl.SaveLogsAsArtifact()
	for _, a := range b.tmpl.Outputs.Artifacts {
		own := fileSecrets(a.Location())
		s.add(own...)
		if a.Location().Kind() == "" || len(own) == 0 && (a.Artifactory != nil || a.OSS != nil) {
			toRepo = true
		}
	}
	if toRepo {
		s.add(repositoryFileSecrets(repo)...)
	}
	return s
}

// secretVolumes returns the volumes that carry keys to the container
// named ctr, one per secret with only those keys, and their mounts.
func secretVolumes(ctr string, keys secretKeys) ([]corev1.Volume, []corev1.VolumeMount) {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for i, name := range slices.Sorted(maps.Keys(keys)) {
		items := make([]corev1.KeyToPath, 0, len(keys[name]))
		for _, k := range slices.Sorted(slices.Values(keys[name])) {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
		vol := fmt.Sprintf("%s-secret-%d", ctr, i)
		vols = append(vols, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name, Items: items}}})
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: path.Join(workflow.ArgoSecretsPath, name), ReadOnly: true})
	}
	return vols, mounts
}
