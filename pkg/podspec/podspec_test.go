package podspec_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/executor/backends"
	"github.com/argoexec/argoexec/executor/emissary"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
)

var update = flag.Bool("update", false, "rewrite the golden pods under testdata/")

const selectorConfig = `
containerRuntimeExecutors:
- name: kubelet
  selector:
    matchLabels: {runtime: kubelet}
- name: docker
  selector:
    matchExpressions: [{key: tier, operator: In, values: [bulk]}]
`

const gcsConfig = `
artifactRepository:
  gcs:
    bucket: artifacts
    serviceAccountKeySecret: {name: gcs-credentials, key: key.json}
`

const s3Config = `
artifactRepository:
  s3:
    endpoint: versitygw.default.svc:7070
    bucket: artifacts
    insecure: true
    accessKeySecret: {name: s3-credentials, key: accesskey}
    secretKeySecret: {name: s3-credentials, key: secretkey}
`

const ossConfig = `
artifactRepository:
  archiveLogs: true
  oss:
    endpoint: http://oss.example:7070
    bucket: artifacts
    accessKeySecret: {name: oss-credentials, key: accessKey}
    secretKeySecret: {name: oss-credentials, key: secretKey}
`

// TestGolden builds one pod per backend and per selection rule and compares
// it with testdata/NAME.golden.yaml. Regenerate with `go test ./pkg/podspec -update`.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name, config, template string
		labels                 map[string]string
	}{
		{name: "k8sapi", config: "", template: "container.yaml"},
		{name: "kubelet", config: "containerRuntimeExecutor: kubelet\nkubeletCAFile: /var/lib/kubelet/pki/kubelet.crt\n", template: "container.yaml"},
		{name: "kubelet-insecure", config: "containerRuntimeExecutor: kubelet\nkubeletInsecure: true\nkubeletPort: 10255\n", template: "container.yaml"},
		{name: "docker", config: "containerRuntimeExecutor: docker\ndockerSockPath: /run/docker.sock\n", template: "base-layer.yaml"},
		{name: "selector", config: selectorConfig, template: "container.yaml", labels: map[string]string{"runtime": "kubelet"}},
		{name: "label", config: selectorConfig, template: "base-layer.yaml",
			labels: map[string]string{"runtime": "kubelet", workflow.LabelContainerRuntimeExecutor: "docker"}},
		{name: "legacy-sidecars", config: "sidecarMode: legacy\n", template: "sidecar-ignores-term.yaml"},
		{name: "native-sidecars", config: "", template: "sidecar-ignores-term.yaml"},
		{name: "script", config: "", template: "script.yaml"},
		{name: "emissary", config: "containerRuntimeExecutor: emissary\n", template: "emissary.yaml"},
		{name: "emissary-image-volume", config: "containerRuntimeExecutor: emissary\nemissaryImageVolume: always\nexecutor:\n  image: registry.local/argoexec:v1\n  imagePullPolicy: IfNotPresent\n", template: "emissary.yaml"},
		{name: "artifacts-s3", config: s3Config, template: "artifacts.yaml"},
		{name: "artifacts-gcs", config: gcsConfig, template: "artifacts-gcs.yaml"},
		{name: "argo-fields", config: "", template: "argo-fields.yaml"},
		{name: "artifacts-stores", config: ossConfig, template: "artifacts-stores.yaml"},
		{name: "archive-logs", config: s3Config, template: "archive-logs.yaml"},
		{name: "executor-spec", config: "executor:\n  image: registry.local/argoexec:v1\n  imagePullPolicy: Always\n  args: [--loglevel=debug]\n" +
			"  env: [{name: GOMAXPROCS, value: '1'}]\n  resources: {limits: {memory: 64Mi}}\n  securityContext: {runAsNonRoot: true}\n", template: "script.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := mustBuild(t, tc.config, tc.template, podspec.Meta{
				PodName: "wf-" + tc.name, Namespace: "argo", WorkflowName: "wf",
				WorkflowLabels: tc.labels, ServiceAccountName: "argoexec",
			})
			got, err := yaml.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (regenerate with -update): %v", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("pod differs from %s (-golden +built); regenerate with `go test ./pkg/podspec -update` if intended:\n%s", golden, diff)
			}
		})
	}
}

func mustBuild(t *testing.T, cfgYAML, templateFile string, meta podspec.Meta) *corev1.Pod {
	t.Helper()
	pod, err := podspec.Build(mustConfig(t, cfgYAML), registered(), mustTemplate(t, templateFile), meta)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return pod
}

func mustConfig(t *testing.T, cfgYAML string) *config.Config {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(cfgYAML), backends.All().Config())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustTemplate(t *testing.T, file string) *workflow.Template {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "templates", file))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := workflow.DecodeTemplate(data)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func meta() podspec.Meta { return podspec.Meta{PodName: "pod", Namespace: "ns"} }

func container(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func names(ctrs []corev1.Container) []string {
	var out []string
	for _, c := range ctrs {
		out = append(out, c.Name)
	}
	return out
}

func envValue(c *corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func TestContainerLayout(t *testing.T) {
	for _, tc := range []struct {
		name, config, template string
		wantInit, wantCtrs     []string
	}{
		{"container without inputs has no init", "containerRuntimeExecutor: docker", "base-layer.yaml", nil, []string{"main", "wait"}},
		{"script without inputs has no init", "", "script.yaml", nil, []string{"main", "wait"}},
		{"input artifacts need init", s3Config, "artifacts.yaml", []string{"init"}, []string{"main", "wait"}},
		{"native sidecars are init containers after init", "", "container.yaml", []string{"proxy"}, []string{"main", "wait"}},
		{"legacy sidecars are containers", "sidecarMode: legacy", "container.yaml", nil, []string{"main", "wait", "proxy"}},
		{"emissary always has init, before the native sidecars", "containerRuntimeExecutor: emissary", "sidecar-ignores-term.yaml",
			[]string{"init", "stubborn"}, []string{"main", "wait"}},
		{"emissary script has init", "containerRuntimeExecutor: emissary", "script.yaml", []string{"init"}, []string{"main", "wait"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := mustBuild(t, tc.config, tc.template, meta())
			if got := names(pod.Spec.InitContainers); !cmp.Equal(got, tc.wantInit) {
				t.Errorf("init containers = %v, want %v", got, tc.wantInit)
			}
			if got := names(pod.Spec.Containers); !cmp.Equal(got, tc.wantCtrs) {
				t.Errorf("containers = %v, want %v", got, tc.wantCtrs)
			}
			if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy = %s", pod.Spec.RestartPolicy)
			}
		})
	}
}

func TestNativeSidecarRestartPolicy(t *testing.T) {
	tmpl := mustTemplate(t, "script.yaml")
	tmpl.Sidecars = []workflow.UserContainer{{Container: corev1.Container{Name: "db", Image: "postgres"}}}
	tmpl.Inputs.Artifacts = []workflow.Artifact{{Name: "in", Path: "/in", Raw: &workflow.RawArtifact{Data: "x"}}}
	pod, err := podspec.Build(config.Default(), registered(), tmpl, meta())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(pod.Spec.InitContainers); !cmp.Equal(got, []string{"init", "db"}) {
		t.Fatalf("init containers = %v, want the sidecar after init", got)
	}
	if rp := pod.Spec.InitContainers[1].RestartPolicy; rp == nil || *rp != corev1.ContainerRestartPolicyAlways {
		t.Errorf("sidecar restartPolicy = %v, want Always", rp)
	}
	if rp := pod.Spec.InitContainers[0].RestartPolicy; rp != nil {
		t.Errorf("init restartPolicy = %v, want unset", *rp)
	}
}

// TestScriptReachesMainWithoutInit: a script template with no input
// artifacts gets no init container; its source is the script annotation,
// projected by the script volume to ScriptSourcePath in main, and counted
// once (the template annotation carries the script without it).
func TestScriptReachesMainWithoutInit(t *testing.T) {
	tmpl := mustTemplate(t, "script.yaml")
	pod := mustBuild(t, "", "script.yaml", meta())
	main := container(pod, "main")
	if !cmp.Equal(main.Command, []string{"python"}) || !cmp.Equal(main.Args, []string{workflow.ScriptSourcePath}) {
		t.Errorf("main runs %v %v, want [python] [%s]", main.Command, main.Args, workflow.ScriptSourcePath)
	}
	if got := names(pod.Spec.InitContainers); len(got) != 0 {
		t.Errorf("init containers = %v, want none (nothing to load)", got)
	}
	if got := pod.Annotations[workflow.AnnotationScript]; got != tmpl.Script.Source {
		t.Errorf("script annotation = %q, want the source %q", got, tmpl.Script.Source)
	}
	carried, err := workflow.DecodeTemplate([]byte(pod.Annotations[workflow.AnnotationTemplate]))
	if err != nil {
		t.Fatal(err)
	}
	want := mustTemplate(t, "script.yaml")
	want.Script.Source = ""
	if diff := cmp.Diff(want, carried); diff != "" {
		t.Errorf("template annotation: want the template without the script's source (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(main.VolumeMounts, func(m corev1.VolumeMount) bool {
		return cmp.Equal(m, corev1.VolumeMount{Name: workflow.ScriptVolume, MountPath: workflow.StagingPath, ReadOnly: true})
	}) {
		t.Errorf("main does not mount %s read-only at %s: %+v", workflow.ScriptVolume, workflow.StagingPath, main.VolumeMounts)
	}
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == workflow.ScriptVolume })
	if i < 0 {
		t.Fatalf("no %s volume", workflow.ScriptVolume)
	}
	vol := pod.Spec.Volumes[i]
	if vol.DownwardAPI == nil || len(vol.DownwardAPI.Items) != 1 ||
		vol.DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.annotations['"+workflow.AnnotationScript+"']" ||
		filepath.Join(workflow.StagingPath, vol.DownwardAPI.Items[0].Path) != workflow.ScriptSourcePath {
		t.Errorf("script volume = %+v, want %s projected to %s", vol, workflow.AnnotationScript, workflow.ScriptSourcePath)
	}
}

// TestInitOnlyForInputArtifacts: init exists exactly when input artifacts
// need loading, script or not, on every backend but emissary, whose pods
// always have it (init stages the wrapper).
func TestInitOnlyForInputArtifacts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		script    bool
		artifacts bool
		wantInit  bool
	}{
		{"container", false, false, false},
		{"script", true, false, false},
		{"container with inputs", false, true, true},
		{"script with inputs", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := mustTemplate(t, "container.yaml")
			tmpl.Inputs.Artifacts = nil
			tmpl.Sidecars = nil // its proxy has no command, which emissary refuses
			if tc.script {
				tmpl.Script = &workflow.ScriptTemplate{Container: *tmpl.Container, Source: "echo hi"}
				tmpl.Container = nil
			}
			if tc.artifacts {
				tmpl.Inputs.Artifacts = []workflow.Artifact{{Name: "in", Path: "/in", Raw: &workflow.RawArtifact{Data: "x"}}}
			}
			for _, backend := range []string{workflow.ExecutorK8sAPI, workflow.ExecutorKubelet, workflow.ExecutorDocker, emissary.ExecutorEmissary} {
				cfg := config.Default()
				cfg.ContainerRuntimeExecutor = backend
				pod, err := podspec.Build(cfg, registered(), tmpl, meta())
				if err != nil {
					t.Fatalf("%s: %v", backend, err)
				}
				want := tc.wantInit || backend == emissary.ExecutorEmissary
				if got := slices.Contains(names(pod.Spec.InitContainers), workflow.InitContainerName); got != want {
					t.Errorf("%s: init container: %v, want %v", backend, got, want)
				}
			}
		})
	}
}

// TestTemplateReachesInitAndWait checks the carrier: the substituted
// template as the pod annotation, projected by a downward-API volume to
// TemplateFile in init and wait, named by ARGO_TEMPLATE_PATH.
func TestTemplateReachesInitAndWait(t *testing.T) {
	pod := mustBuild(t, s3Config, "artifacts.yaml", meta())
	got, err := workflow.DecodeTemplate([]byte(pod.Annotations[workflow.AnnotationTemplate]))
	if err != nil {
		t.Fatalf("annotation does not decode strictly: %v", err)
	}
	want, err := podspec.SubstituteInputs(mustTemplate(t, "artifacts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotation template differs (-want +got):\n%s", diff)
	}
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == workflow.PodMetadataVolume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.DownwardAPI == nil || len(vol.DownwardAPI.Items) != 1 ||
		vol.DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.annotations['workflows.argoproj.io/template']" ||
		filepath.Join(workflow.PodMetadataPath, vol.DownwardAPI.Items[0].Path) != workflow.TemplateFile {
		t.Fatalf("template volume = %+v", vol)
	}
	for _, name := range []string{"init", "wait"} {
		c := container(pod, name)
		if e, ok := envValue(c, workflow.EnvTemplatePath); !ok || e.Value != workflow.TemplateFile {
			t.Errorf("%s %s = %+v", name, workflow.EnvTemplatePath, e)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == workflow.PodMetadataVolume && m.MountPath == workflow.PodMetadataPath
		}) {
			t.Errorf("%s does not mount the template volume", name)
		}
		for _, e := range c.Env {
			if len(e.Value) > 1024 {
				t.Errorf("%s env %s is %d bytes: the template must not travel in env", name, e.Name, len(e.Value))
			}
		}
	}
}

func TestLargeScript(t *testing.T) {
	build := func(size int) (*corev1.Pod, error) {
		tmpl := mustTemplate(t, "script.yaml")
		line := "echo 'a line of the script that is <long> & \"quoted\"'\n"
		tmpl.Script.Source = strings.Repeat(line, size/len(line))
		return podspec.Build(config.Default(), registered(), tmpl, meta())
	}
	pod, err := build(200 * 1024)
	if err != nil {
		t.Fatalf("200 KiB script: %v", err)
	}
	total := 0
	for k, v := range pod.Annotations {
		total += len(k) + len(v)
	}
	if total > workflow.MaxAnnotationBytes {
		t.Errorf("200 KiB script: annotations are %d bytes, over %d", total, workflow.MaxAnnotationBytes)
	}
	_, err = build(300 * 1024)
	if err == nil || !strings.Contains(err.Error(), "over the API server's limit of 262144") || !strings.Contains(err.Error(), "input artifact") {
		t.Errorf("300 KiB script: error = %v, want the annotation-limit error pointing to artifacts", err)
	}
}

func TestSubstituteInputs(t *testing.T) {
	pod := mustBuild(t, "", "container.yaml", meta())
	want := `for i in $(seq 3); do echo 'hello "world" & <friends>'; done > /work/out`
	if got := container(pod, "main").Args[0]; got != want {
		t.Errorf("main args = %q, want %q", got, want)
	}
	if strings.Contains(pod.Annotations[workflow.AnnotationTemplate], "{{inputs.parameters") {
		t.Error("annotation template still holds input references")
	}
}

func TestSubstituteInputsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"unknown reference", "inputs: {parameters: [{name: a, value: x}]}\ncontainer: {image: i, args: ['{{inputs.parameters.b}}', '{{ inputs.parameters.c }}']}\n",
			[]string{"unknown reference {{inputs.parameters.b}}", "unknown reference {{inputs.parameters.c}}", "declares input parameters [a]"}},
		{"no value", "inputs: {parameters: [{name: a}]}\ncontainer: {image: i, args: ['{{inputs.parameters.a}}']}\n",
			[]string{`input parameter "a" has neither value nor default`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := workflow.DecodeTemplate([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			_, err = podspec.Build(config.Default(), registered(), tmpl, meta())
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestGCSCredentialsOnlyInInitAndWait: a gcs repository's service-account
// key reaches init and wait as a secretKeyRef, never main or a sidecar; an
// s3 artifact is refused with a gcs repository.
func TestGCSCredentialsOnlyInInitAndWait(t *testing.T) {
	tmpl := mustTemplate(t, "artifacts-gcs.yaml")
	tmpl.Sidecars = []workflow.UserContainer{{Container: corev1.Container{Name: "side", Image: "x"}}}
	pod, err := podspec.Build(mustConfig(t, gcsConfig), registered(), tmpl, meta())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		e, has := envValue(&c, workflow.EnvGCSServiceAccountKey)
		if want := c.Name == "init" || c.Name == "wait"; has != want {
			t.Errorf("container %s: has the GCS key = %v, want %v", c.Name, has, want)
		} else if want && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "gcs-credentials" || e.ValueFrom.SecretKeyRef.Key != "key.json") {
			t.Errorf("container %s: %s = %+v, want a secretKeyRef", c.Name, workflow.EnvGCSServiceAccountKey, e)
		}
	}
	_, err = podspec.Build(mustConfig(t, gcsConfig), registered(), mustTemplate(t, "artifacts.yaml"), meta())
	if want := "inputs.artifacts[0].s3: the ConfigMap's artifactRepository is gcs"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Build of an s3 input with a gcs repository: %v, want %q", err, want)
	}
}

func TestBuildDoesNotChangeTemplate(t *testing.T) {
	tmpl := mustTemplate(t, "container.yaml")
	if _, err := podspec.Build(config.Default(), registered(), tmpl, meta()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mustTemplate(t, "container.yaml"), tmpl); diff != "" {
		t.Errorf("podspec.Build changed its template (-before +after):\n%s", diff)
	}
}

// TestS3CredentialsOnlyInInitAndWait checks that main and the sidecars never
// see the artifact repository's secrets.
func TestS3CredentialsOnlyInInitAndWait(t *testing.T) {
	tmpl := mustTemplate(t, "artifacts.yaml")
	tmpl.Sidecars = []workflow.UserContainer{{Container: corev1.Container{Name: "side", Image: "x"}}}
	pod, err := podspec.Build(mustConfig(t, s3Config), registered(), tmpl, meta())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		_, hasKey := envValue(&c, workflow.EnvS3AccessKey)
		_, hasSecret := envValue(&c, workflow.EnvS3SecretKey)
		want := c.Name == "init" || c.Name == "wait"
		if hasKey != want || hasSecret != want {
			t.Errorf("container %s: has S3 credentials = %v/%v, want %v", c.Name, hasKey, hasSecret, want)
		}
		if want {
			e, _ := envValue(&c, workflow.EnvS3SecretKey)
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "s3-credentials" || e.ValueFrom.SecretKeyRef.Key != "secretkey" {
				t.Errorf("container %s: %s = %+v, want a secretKeyRef", c.Name, workflow.EnvS3SecretKey, e)
			}
			repo, _ := envValue(&c, workflow.EnvArtifactRepository)
			var got workflow.ArtifactRepository
			if err := json.Unmarshal([]byte(repo.Value), &got); err != nil || got.S3 == nil || got.S3.Bucket != "artifacts" || got.S3.KeyFormat != workflow.DefaultKeyFormat {
				t.Errorf("container %s: %s = %q (%v)", c.Name, workflow.EnvArtifactRepository, repo.Value, err)
			}
		}
	}
	main := container(pod, "main")
	if !slices.ContainsFunc(main.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == workflow.InputArtifactsVolume && m.MountPath == "/in/data" && m.SubPath == "data"
	}) {
		t.Errorf("main does not mount input artifact data: %+v", main.VolumeMounts)
	}
}

func TestBackendShaping(t *testing.T) {
	t.Run("docker socket in wait only", func(t *testing.T) {
		pod := mustBuild(t, "containerRuntimeExecutor: docker", "container.yaml", meta())
		for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			has := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == workflow.DockerSockVolume })
			if has != (c.Name == "wait") {
				t.Errorf("container %s mounts the docker socket: %v", c.Name, has)
			}
			if c.Name == "wait" {
				m := c.VolumeMounts[slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == workflow.DockerSockVolume })]
				if !m.ReadOnly || m.MountPath != workflow.DefaultDockerSockPath {
					t.Errorf("docker socket mount = %+v", m)
				}
			}
		}
	})
	t.Run("k8sapi adds nothing", func(t *testing.T) {
		pod := mustBuild(t, "", "container.yaml", meta())
		wait := container(pod, "wait")
		for _, e := range wait.Env {
			if strings.HasPrefix(e.Name, "ARGO_KUBELET") || e.Name == workflow.EnvDockerSockPath {
				t.Errorf("k8sapi wait has %s", e.Name)
			}
		}
		for _, v := range pod.Spec.Volumes {
			if v.HostPath != nil {
				t.Errorf("k8sapi pod has hostPath volume %s", v.Name)
			}
		}
	})
	t.Run("kubelet CA under the service-account mount is not mounted again", func(t *testing.T) {
		pod := mustBuild(t, "containerRuntimeExecutor: kubelet\nkubeletCAFile: "+workflow.ServiceAccountCAPath, "container.yaml", meta())
		for _, v := range pod.Spec.Volumes {
			if v.HostPath != nil {
				t.Errorf("unexpected hostPath volume %s", v.Name)
			}
		}
		if e, _ := envValue(container(pod, "wait"), workflow.EnvKubeletCAFile); e.Value != workflow.ServiceAccountCAPath {
			t.Errorf("%s = %q", workflow.EnvKubeletCAFile, e.Value)
		}
	})
}

// TestEmissaryPod: on emissary, main and every sidecar run under the
// wrapper with their args unchanged, their own ARGO_CONTAINER_NAME and the
// var-run-argo mount, after init; init and wait are not wrapped; and a
// container without a command is refused by name.
func TestEmissaryPod(t *testing.T) {
	const cfg = "containerRuntimeExecutor: emissary\n"
	wrapped := func(cmd ...string) []string { return append([]string{emissary.WrapperPath, "emissary", "--"}, cmd...) }
	for _, tc := range []struct {
		name, config, template string
		edit                   func(*workflow.Template)
		// want maps each wrapped container to its command and args.
		want    map[string][2][]string
		wantErr []string
	}{
		{name: "container with a native sidecar", config: cfg, template: "emissary.yaml", want: map[string][2][]string{
			"main":     {wrapped("sh", "-c"), {"echo 42 > /tmp/answer; date > /work/date"}},
			"stubborn": {wrapped("sh", "-c", "trap '' TERM; while true; do sleep 1; done"), nil},
		}},
		{name: "legacy sidecar", config: cfg + "sidecarMode: legacy\n", template: "sidecar-ignores-term.yaml", want: map[string][2][]string{
			"main":     {wrapped("sh", "-c", "sleep 2; echo done"), nil},
			"stubborn": {wrapped("sh", "-c", "trap '' TERM; while true; do sleep 1; done"), nil},
		}},
		{name: "script", config: cfg, template: "script.yaml", want: map[string][2][]string{
			"main": {wrapped("python"), {workflow.ScriptSourcePath}},
		}},
		{name: "script with input artifacts", config: cfg + s3Config, template: "script.yaml",
			edit: func(t *workflow.Template) {
				t.Inputs.Artifacts = []workflow.Artifact{{Name: "in", Path: "/in", Raw: &workflow.RawArtifact{Data: "x"}}}
			},
			want: map[string][2][]string{"main": {wrapped("python"), {workflow.ScriptSourcePath}}}},
		{name: "main without a command", config: cfg, template: "base-layer.yaml",
			edit:    func(t *workflow.Template) { t.Container.Command, t.Container.Args = nil, []string{"echo hi"} },
			wantErr: []string{`container "main": command is empty`, "cannot read the image's ENTRYPOINT", "set command", "pick another executor"}},
		{name: "sidecar without a command", config: cfg, template: "container.yaml",
			wantErr: []string{`sidecar "proxy": command is empty`, "set command"}},
		{name: "main and sidecar without a command", config: cfg, template: "container.yaml",
			edit:    func(t *workflow.Template) { t.Container.Command = nil },
			wantErr: []string{`container "main": command is empty`, `sidecar "proxy": command is empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := mustTemplate(t, tc.template)
			if tc.edit != nil {
				tc.edit(tmpl)
			}
			pod, err := podspec.Build(mustConfig(t, tc.config), registered(), tmpl, meta())
			if len(tc.wantErr) > 0 {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("podspec.Build error = %v, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(pod.Spec.InitContainers); len(got) == 0 || got[0] != workflow.InitContainerName {
				t.Errorf("init containers = %v, want init first (it stages the wrapper)", got)
			}
			for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
				want, isWrapped := tc.want[c.Name]
				name, hasName := envValue(&c, workflow.EnvArgoContainerName)
				mounts := 0
				for _, m := range c.VolumeMounts {
					if m.Name == workflow.VarRunArgoVolume && m.MountPath == workflow.VarRunArgoPath && !m.ReadOnly {
						mounts++
					}
				}
				if mounts != 1 {
					t.Errorf("%s mounts %s at %s read-write %d times, want once", c.Name, workflow.VarRunArgoVolume, workflow.VarRunArgoPath, mounts)
				}
				if !isWrapped {
					if slices.Contains(c.Command, emissary.WrapperPath) || hasName {
						t.Errorf("%s is wrapped (command %q, %s %q); only main and the sidecars are", c.Name, c.Command, workflow.EnvArgoContainerName, name.Value)
					}
					continue
				}
				if !cmp.Equal(c.Command, want[0]) || !cmp.Equal(c.Args, want[1]) {
					t.Errorf("%s runs %q %q, want %q %q", c.Name, c.Command, c.Args, want[0], want[1])
				}
				if !hasName || name.Value != c.Name {
					t.Errorf("%s: %s = %+v, want %q", c.Name, workflow.EnvArgoContainerName, name, c.Name)
				}
				delete(tc.want, c.Name)
			}
			if len(tc.want) > 0 {
				t.Errorf("containers %v are not in the pod", tc.want)
			}
		})
	}
}

func TestMirroredMounts(t *testing.T) {
	pod := mustBuild(t, "", "container.yaml", meta())
	wait := container(pod, "wait")
	if !slices.ContainsFunc(wait.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "work" && m.MountPath == "/mainctrfs/work" && m.ReadOnly
	}) {
		t.Errorf("wait does not mirror main's /work: %+v", wait.VolumeMounts)
	}
}

// TestOutputsOutsideVolumes checks that kubelet and k8sapi refuse outputs
// in main's own filesystem, naming the backends that read them, and that
// docker and emissary accept them.
func TestOutputsOutsideVolumes(t *testing.T) {
	for _, backend := range []string{"k8sapi", "kubelet"} {
		_, err := podspec.Build(mustConfig(t, "containerRuntimeExecutor: "+backend), registered(), mustTemplate(t, "base-layer.yaml"), meta())
		for _, want := range []string{
			`output parameter "answer": path /tmp/out is not on a volume of main`,
			`output artifact "tmp": path /tmp is not on a volume`,
			"the " + backend + " executor cannot read",
			"put the path on a volume (emptyDir) or use the docker or emissary executor",
		} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error = %v, want it to contain %q", backend, err, want)
			}
		}
	}
	for _, backend := range []string{"docker", "emissary"} {
		if _, err := podspec.Build(mustConfig(t, "containerRuntimeExecutor: "+backend), registered(), mustTemplate(t, "base-layer.yaml"), meta()); err != nil {
			t.Errorf("%s: %v", backend, err)
		}
	}
}

// TestArgoFields checks that every Argo field argoexec-step does not
// implement is refused by name with what to do, and that ignored ones are
// listed by podspec.IgnoredFields.
func TestArgoFields(t *testing.T) {
	const main = "container: {image: a}\n"
	for _, tc := range []struct {
		name, template string
		want           string // in podspec.Build's error; "" means podspec.Build succeeds
		ignored        []string
	}{
		{"retryStrategy", main + "retryStrategy: {limit: 3}\n", "retryStrategy: not supported by argoexec-step run; Argo's controller handles it", nil},
		{"timeout", main + "timeout: 30s\n", "timeout: not supported by argoexec-step run", nil},
		{"daemon", main + "daemon: true\n", "daemon: not supported", nil},
		{"daemon false", main + "daemon: false\n", "", nil},
		{"podSpecPatch", main + "podSpecPatch: '{}'\n", "podSpecPatch: not supported", nil},
		{"initContainers", main + "initContainers: [{name: i, image: b}]\n", "initContainers: not supported", nil},
		{"executor", main + "executor: {serviceAccountName: x}\n", "executor: not supported", nil},
		{"archiveLocation", main + "archiveLocation: {s3: {key: k}}\n", "archiveLocation: not supported", nil},
		{"automount false", main + "automountServiceAccountToken: false\n", "automountServiceAccountToken: not supported", nil},
		{"automount true", main + "automountServiceAccountToken: true\n", "", nil},
		{"steps", "steps: [[{name: a, template: b}]]\n", "steps: not supported by argoexec-step run", nil},
		{"dag", "dag: {tasks: [{name: a, template: b}]}\n", "dag: not supported", nil},
		{"suspend", "suspend: {}\n", "suspend: not supported", nil},
		{"resource", "resource: {action: create, manifest: x}\n", "resource: not supported", nil},
		{"data", "data: {source: {}, transformation: []}\n", "data: not supported", nil},
		{"containerSet", "containerSet: {containers: [{name: a, image: b}]}\n", "containerSet: not supported", nil},
		{"http", "http: {url: 'http://x'}\n", "http: not supported", nil},
		{"plugin", "plugin: {hello: {}}\n", "plugin: not supported", nil},
		{"valueFrom jsonPath", main + "outputs: {parameters: [{name: p, valueFrom: {jsonPath: '{.x}'}}]}\n", "outputs.parameters[0].valueFrom.jsonPath: not supported", nil},
		{"valueFrom expression", main + "outputs: {parameters: [{name: p, valueFrom: {path: /x}}, {name: q, valueFrom: {expression: x}}]}\n", "outputs.parameters[1].valueFrom.expression: not supported", nil},
		{"valueFrom default", main + "outputs: {parameters: [{name: p, valueFrom: {path: /x, default: d}}]}\n", "", nil},
		{"git input", main + "inputs: {artifacts: [{name: a, path: /a, git: {repo: r}}]}\n", "", nil},
		{"git output", main + "outputs: {artifacts: [{name: a, path: /a, git: {repo: r}}]}\n", "outputs.artifacts[0].git: not supported by argoexec-step run; Argo's controller handles it (git artifacts are inputs only", nil},
		{"artifactory input and output", main + "inputs: {artifacts: [{name: a, path: /a, artifactory: {url: 'http://rt/x'}}]}\noutputs: {artifacts: [{name: b, path: /b, artifactory: {url: 'http://rt/y'}}]}\n", "", nil},
		{"oss input and output", main + "inputs: {artifacts: [{name: a, path: /a, oss: {endpoint: e, bucket: b, key: k}}]}\noutputs: {artifacts: [{name: b, path: /b, oss: {key: k}}]}\n", "", nil},
		{"hdfs input", main + "inputs: {artifacts: [{name: a, path: /a, hdfs: {path: /p}}]}\n", "inputs.artifacts[0].hdfs: not supported by argoexec-step run; Argo's controller handles it (argoexec has no hdfs store", nil},
		{"hdfs output", main + "outputs: {artifacts: [{name: a, path: /a, hdfs: {path: /p}}]}\n", "outputs.artifacts[0].hdfs: not supported", nil},
		{"archiveLocation with archiveLogs alone, no repository", main + "archiveLocation: {archiveLogs: true}\n", "archiveLocation.archiveLogs: main's log is saved to the artifact repository, and the ConfigMap has none", nil},
		{"archiveLocation with archiveLogs false", main + "archiveLocation: {archiveLogs: false}\n", "", nil},
		{"archiveLocation with a location and archiveLogs", main + "archiveLocation: {archiveLogs: true, s3: {key: k}}\n", "archiveLocation: not supported", nil},
		{"gcs output, s3 repository", main + "outputs: {artifacts: [{name: a, path: /a, gcs: {key: k}}]}\n", "outputs.artifacts[0].gcs: the ConfigMap's artifactRepository is not gcs", nil},
		{"artifact mode", main + "inputs: {artifacts: [{name: a, path: /a, mode: 0755, raw: {data: x}}]}\n", "inputs.artifacts[0].mode: not supported", nil},
		{"artifact from", main + "inputs: {artifacts: [{name: a, path: /a, from: x}]}\n", "inputs.artifacts[0].from: not supported", nil},
		{"zip", main + "outputs: {artifacts: [{name: a, path: /a, archive: {zip: {}}}]}\n", "outputs.artifacts[0].archive.zip: not supported", nil},
		{"ignored", main + "metrics: {prometheus: []}\nsynchronization: {mutex: {name: m}}\nparallelism: 2\nfailFast: true\n" +
			"outputs: {parameters: [{name: p, globalName: g, valueFrom: {path: /p}}], artifacts: [{name: a, path: /a, globalName: h}]}\n", "",
			[]string{"metrics", "synchronization", "parallelism", "failFast", "outputs.parameters[0].globalName", "outputs.artifacts[0].globalName"}},
		{"two refused", main + "retryStrategy: {}\ntimeout: 1m\n", "retryStrategy: not supported", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := workflow.DecodeTemplate([]byte(tc.template))
			if err != nil {
				t.Fatalf("DecodeTemplate: %v", err)
			}
			docker, err := config.ParseConfig([]byte("containerRuntimeExecutor: docker\n"), backends.All().Config()) // reads outputs from main's own filesystem
			if err != nil {
				t.Fatal(err)
			}
			_, err = podspec.Build(docker, registered(), tmpl, meta())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Build: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("podspec.Build error = %v, want it to contain %q", err, tc.want)
			case tc.want != "" && strings.Contains(err.Error(), "unknown field"):
				t.Fatalf("podspec.Build error = %v: says unknown field", err)
			}
			if diff := cmp.Diff(tc.ignored, podspec.IgnoredFields(tmpl)); diff != "" {
				t.Errorf("podspec.IgnoredFields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFieldsTable keeps FIELDS.md equal to podspec.Fields(); regenerate with
// `go test ./pkg/podspec -update`.
func TestFieldsTable(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("# Argo's template fields under argoexec-step\n\n" +
		"Every field of Argo v3.3.8's Template decodes (pkg/apis/workflow). `argoexec-step`\n" +
		"runs one container or script template as one pod; for each field that a controller acts\n" +
		"on, it applies it to the pod, ignores it (harmless for one pod run; `render` and `run` log\n" +
		"the ignored fields) or refuses it with an error naming the field. Under Argo's own\n" +
		"controller all of them work as in Argo. Generated from `podspec.Fields()`.\n\n" +
		"| field | handling | why / what to do |\n|---|---|---|\n")
	for _, f := range podspec.Fields() {
		fmt.Fprintf(&sb, "| `%s` | %s | %s |\n", f.Path, f.Handling, strings.ReplaceAll(f.Why, "|", `\|`))
	}
	if *update {
		if err := os.WriteFile("FIELDS.md", []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("FIELDS.md")
	if err != nil {
		t.Fatalf("read FIELDS.md (regenerate with -update): %v", err)
	}
	if diff := cmp.Diff(sb.String(), string(got)); diff != "" {
		t.Errorf("FIELDS.md differs from podspec.Fields() (-code +file); regenerate with `go test ./pkg/podspec -update`:\n%s", diff)
	}
}

// TestFieldsDocumented checks that every decision says why.
func TestFieldsDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range podspec.Fields() {
		if f.Why == "" || seen[f.Path] || !slices.Contains([]podspec.Handling{podspec.Applied, podspec.Ignored, podspec.Refused}, f.Handling) {
			t.Errorf("field %+v: empty why, listed twice or unknown handling", f.Path)
		}
		seen[f.Path] = true
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name, template string
		meta           podspec.Meta
		want           string
	}{
		{"no main", "name: x\n", meta(), "neither container nor script"},
		{"both mains", "container: {image: a}\nscript: {image: b, command: [sh], source: x}\n", meta(), "both container and script"},
		{"script without command", "script: {image: b, source: x}\n", meta(), "script.command is empty"},
		{"reserved sidecar", "container: {image: a}\nsidecars: [{name: wait, image: b}]\n", meta(), `sidecars[0].name: "wait"`},
		{"duplicate sidecar", "container: {image: a}\nsidecars: [{name: s, image: b}, {name: s, image: b}]\n", meta(), `sidecars[1].name: "s"`},
		{"undeclared volume", "container: {image: a, volumeMounts: [{name: work, mountPath: /w}]}\n", meta(), `container.volumeMounts[0]: volume "work" is not declared`},
		{"reserved volume", "volumes: [{name: var-run-argo, emptyDir: {}}]\ncontainer: {image: a}\n", meta(), `volumes[0].name: "var-run-argo" is reserved`},
		{"relative input artifact", "inputs: {artifacts: [{name: a, path: rel, raw: {data: x}}]}\ncontainer: {image: a}\n", meta(), `inputs.artifacts[0].path: "rel"`},
		{"reserved annotation", "metadata: {annotations: {workflows.argoproj.io/template: x}}\ncontainer: {image: a}\n", meta(), "metadata.annotations: workflows.argoproj.io/template"},
		{"no pod name", "container: {image: a}\n", podspec.Meta{}, "pod name is empty"},
		{"bad pod name", "container: {image: a}\n", podspec.Meta{PodName: "Bad_Name"}, `pod name "Bad_Name"`},
		{"bad workflow name", "container: {image: a}\n", podspec.Meta{PodName: "p", WorkflowName: "a b"}, `workflow name "a b"`},
		{"bad executor label", "container: {image: a}\n", podspec.Meta{PodName: "p", WorkflowLabels: map[string]string{workflow.LabelContainerRuntimeExecutor: "pns"}}, `executor "pns" is Argo's, not implemented by argoexec`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := workflow.DecodeTemplate([]byte(tc.template))
			if err != nil {
				t.Fatal(err)
			}
			_, err = podspec.Build(config.Default(), registered(), tmpl, tc.meta)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("podspec.Build error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// registered is the backends the binaries have.
func registered() []podspec.Backend { return backends.All().Pods() }
