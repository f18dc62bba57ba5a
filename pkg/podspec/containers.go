package podspec

import (
	"encoding/json"
	"path"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// argoexecBinary is the command of init and wait when executor.command is unset.
const argoexecBinary = "argoexec"

// mainContainer is the template's container, or its script's container
// running the source projected from the script annotation, plus the shared
// volumes.
func (b *builder) mainContainer() corev1.Container {
	var c corev1.Container
	if s := b.tmpl.Script; s != nil {
		c = *s.Container.DeepCopy()
		c.Args = append(c.Args, workflow.ScriptSourcePath)
	} else {
		c = *b.tmpl.Container.DeepCopy()
	}
	c.Name = workflow.MainContainerName
	c.VolumeMounts = append(c.VolumeMounts, varRunArgoMount())
	if b.tmpl.Script != nil {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: workflow.ScriptVolume, MountPath: workflow.StagingPath, ReadOnly: true})
	}
	for _, a := range b.tmpl.Inputs.Artifacts {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: workflow.InputArtifactsVolume, MountPath: a.Path, SubPath: a.Name})
	}
	return c
}

// initContainer runs `argoexec init`: it loads input artifacts and runs the
// backend's init hook (emissary's stages the wrapper on var-run-argo).
func (b *builder) initContainer() corev1.Container {
	c := b.executorContainer(workflow.InitContainerName)
	if len(b.tmpl.Inputs.Artifacts) > 0 {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: workflow.InputArtifactsVolume, MountPath: workflow.InputArtifactsPath})
	}
	_, mounts := secretVolumes(workflow.InitContainerName, b.initSecrets())
	c.VolumeMounts = append(c.VolumeMounts, mounts...)
	return c
}

// waitContainer runs `argoexec wait` with main's volume mounts mirrored
// read-only under MainCtrFSPath; the backend's Shape adds what it needs.
func (b *builder) waitContainer() corev1.Container {
	c := b.executorContainer(workflow.WaitContainerName)
	for _, m := range mainMounts(b.tmpl) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
			Name:        m.Name,
			MountPath:   path.Join(workflow.MainCtrFSPath, m.MountPath),
			SubPath:     m.SubPath,
			SubPathExpr: m.SubPathExpr,
			ReadOnly:    true,
		})
	}
	_, mounts := secretVolumes(workflow.WaitContainerName, b.waitSecrets())
	c.VolumeMounts = append(c.VolumeMounts, mounts...)
	return c
}

// executorContainer is the ConfigMap's executor spec running `argoexec
// NAME`, with the env and mounts that init and wait share.
func (b *builder) executorContainer(name string) corev1.Container {
	c := *b.cfg.Executor.DeepCopy()
	c.Name = name
	if len(c.Command) == 0 {
		c.Command = []string{argoexecBinary}
	}
	c.Command = append(c.Command, name)
	c.Env = append(b.executorEnv(), b.cfg.Executor.Env...)
	c.SecurityContext = b.executorSecurityContext()
	c.VolumeMounts = []corev1.VolumeMount{
		varRunArgoMount(),
		{Name: workflow.PodMetadataVolume, MountPath: workflow.PodMetadataPath, ReadOnly: true},
		{Name: workflow.ExecutorTmpVolume, MountPath: workflow.ExecutorTmpPath},
	}
	return c
}

// executorEnv is the environment that init and wait share. The S3 keys and
// the GCS service-account key are secret references here and nowhere else:
// main never gets them (the secrets of git, artifactory and oss are files,
// secretVolumes).
func (b *builder) executorEnv() []corev1.EnvVar {
	env := []corev1.EnvVar{
		FieldEnv(workflow.EnvPodName, "metadata.name"),
		FieldEnv(workflow.EnvPodNamespace, "metadata.namespace"),
		FieldEnv(workflow.EnvPodUID, "metadata.uid"),
		{Name: workflow.EnvWorkflowName, Value: b.meta.WorkflowName},
		{Name: workflow.EnvContainerRuntimeExecutor, Value: b.backend.Name()},
		{Name: workflow.EnvSidecarMode, Value: b.cfg.SidecarMode},
		{Name: workflow.EnvTemplatePath, Value: workflow.TemplateFile},
	}
	r := b.cfg.ArtifactRepository
	s3, gcs := r.S3, r.GCS
	if s3 == nil && gcs == nil && r.Artifactory == nil && r.OSS == nil {
		return env
	}
	repo, _ := json.Marshal(b.cfg.ArtifactRepository) // plain strings and pointers: cannot fail
	env = append(env, corev1.EnvVar{Name: workflow.EnvArtifactRepository, Value: string(repo)})
	if s3 != nil && s3.AccessKeySecret != nil && s3.SecretKeySecret != nil {
		env = append(env, secretEnv(workflow.EnvS3AccessKey, s3.AccessKeySecret), secretEnv(workflow.EnvS3SecretKey, s3.SecretKeySecret))
	}
	if gcs != nil && gcs.ServiceAccountKeySecret != nil {
		env = append(env, secretEnv(workflow.EnvGCSServiceAccountKey, gcs.ServiceAccountKeySecret))
	}
	return env
}

// sidecars are the user's sidecars; the caller decides whether they run as
// native sidecars (init containers restarted Always) or plain containers.
func (b *builder) sidecars() []corev1.Container {
	native := b.cfg.SidecarMode != workflow.SidecarModeLegacy
	out := make([]corev1.Container, 0, len(b.tmpl.Sidecars))
	for _, s := range b.tmpl.Sidecars {
		c := *s.Container.DeepCopy()
		if s.MirrorVolumeMounts != nil && *s.MirrorVolumeMounts {
			c.VolumeMounts = append(c.VolumeMounts, mainMounts(b.tmpl)...)
		}
		if native {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		out = append(out, c)
	}
	return out
}

// volumes are the pod's volumes: the shared emptyDir, the template carrier,
// the input-artifact emptyDir and the template's own; the backend's Shape
// adds its own after them.
func (b *builder) volumes() []corev1.Volume {
	vols := []corev1.Volume{
		{Name: workflow.VarRunArgoVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		templateVolume(),
		{Name: workflow.ExecutorTmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if b.tmpl.Script != nil {
		vols = append(vols, annotationVolume(workflow.ScriptVolume, path.Base(workflow.ScriptSourcePath), workflow.AnnotationScript))
	}
	if len(b.tmpl.Inputs.Artifacts) > 0 {
		vols = append(vols, corev1.Volume{Name: workflow.InputArtifactsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if needsInit(b.cfg, b.tmpl, b.backend) {
		initVols, _ := secretVolumes(workflow.InitContainerName, b.initSecrets())
		vols = append(vols, initVols...)
	}
	waitVols, _ := secretVolumes(workflow.WaitContainerName, b.waitSecrets())
	vols = append(vols, waitVols...)
	for _, v := range b.tmpl.Volumes {
		vols = append(vols, *v.DeepCopy())
	}
	return vols
}

// templateVolume projects the template annotation as the file
// workflow.TemplateFile. Unlike an env var, it is not bounded by the
// kernel's ARG_MAX (argo-workflows #7586), only by the annotation budget.
func templateVolume() corev1.Volume {
	return annotationVolume(workflow.PodMetadataVolume, path.Base(workflow.TemplateFile), workflow.AnnotationTemplate)
}

// annotationVolume is the downward-API volume name that projects the pod
// annotation key as the file file.
func annotationVolume(name, file, key string) corev1.Volume {
	return corev1.Volume{
		Name: name,
		VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{
				Path:     file,
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + key + "']"},
			}},
		}},
	}
}

func varRunArgoMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: workflow.VarRunArgoVolume, MountPath: workflow.VarRunArgoPath}
}

func secretEnv(name string, ref *corev1.SecretKeySelector) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: ref.DeepCopy()}}
}
