package podspec_test

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// TestStoreSecrets: per store, the secret keys an artifact (or the
// repository) names reach init for inputs and wait for outputs as files
// under /argo/secret/NAME/KEY, each container only its own keys, main
// none; s3 and gcs repositories keep their keys in the environment.
func TestStoreSecrets(t *testing.T) {
	const main = "container: {image: a, volumeMounts: [{name: out, mountPath: /out}]}\nvolumes: [{name: out, emptyDir: {}}]\n"
	const rtRepo = "artifactRepository:\n  artifactory: {repoURL: 'http://rt/generic', usernameSecret: {name: rt, key: user}, passwordSecret: {name: rt, key: pass}}\n"
	const ossRepo = "artifactRepository:\n  oss: {endpoint: oss:7070, bucket: b, accessKeySecret: {name: oss, key: a}, secretKeySecret: {name: oss, key: s}}\n"
	tests := []struct {
		name, config, template string
		init, wait             []string // NAME/KEY files
		waitEnv                []string // secret-referencing env names in wait
	}{
		{name: "git input, username and password", template: main + "inputs: {artifacts: [{name: src, path: /src, git: {repo: r, usernameSecret: {name: git, key: u}, passwordSecret: {name: git, key: p}}}]}\n",
			init: []string{"git/p", "git/u"}},
		{name: "git input, SSH key", template: main + "inputs: {artifacts: [{name: src, path: /src, git: {repo: r, sshPrivateKeySecret: {name: ssh, key: id}}}]}\n",
			init: []string{"ssh/id"}},
		{name: "git input without secrets", template: main + "inputs: {artifacts: [{name: src, path: /src, git: {repo: r}}]}\n"},
		{name: "artifactory input with its own secrets", template: main + "inputs: {artifacts: [{name: a, path: /a, artifactory: {url: 'http://rt/x', usernameSecret: {name: rt, key: user}, passwordSecret: {name: rt, key: pass}}}]}\n",
			init: []string{"rt/pass", "rt/user"}},
		{name: "artifactory output to the repository", config: rtRepo, template: main + "outputs: {artifacts: [{name: o, path: /out/o}]}\n",
			wait: []string{"rt/pass", "rt/user"}},
		{name: "artifactory input without secrets takes the repository's", config: rtRepo, template: main + "inputs: {artifacts: [{name: a, path: /a, artifactory: {url: 'http://rt/generic/x'}}]}\n",
			init: []string{"rt/pass", "rt/user"}},
		{name: "oss output with its own location and secrets", template: main + "outputs: {artifacts: [{name: o, path: /out/o, oss: {endpoint: e, bucket: b, key: k, accessKeySecret: {name: o, key: a}, secretKeySecret: {name: o, key: s}}}]}\n",
			wait: []string{"o/a", "o/s"}},
		{name: "oss input from the repository", config: ossRepo, template: main + "inputs: {artifacts: [{name: a, path: /a, oss: {key: k}}]}\n",
			init: []string{"oss/a", "oss/s"}},
		{name: "archiveLogs to an oss repository: wait only", config: ossRepo, template: main + "archiveLocation: {archiveLogs: true}\n",
			wait: []string{"oss/a", "oss/s"}},
		{name: "s3 repository: keys in the environment, no secret files", config: s3Config, template: main + "archiveLocation: {archiveLogs: true}\noutputs: {artifacts: [{name: o, path: /out/o}]}\n",
			waitEnv: []string{workflow.EnvS3AccessKey, workflow.EnvS3SecretKey}},
		{name: "gcs repository: its key in the environment", config: gcsConfig, template: main + "outputs: {artifacts: [{name: o, path: /out/o}]}\n",
			waitEnv: []string{workflow.EnvGCSServiceAccountKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := workflow.DecodeTemplate([]byte(tt.template))
			if err != nil {
				t.Fatal(err)
			}
			pod, err := podspec.Build(mustConfig(t, tt.config), registered(), tmpl, meta())
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			for _, c := range []struct {
				name string
				want []string
			}{{"init", tt.init}, {"wait", tt.wait}, {"main", nil}} {
				ctr := container(pod, c.name)
				if ctr == nil {
					if len(c.want) > 0 {
						t.Fatalf("no %s container, want it to read %v", c.name, c.want)
					}
					continue
				}
				if diff := cmp.Diff(c.want, secretFiles(pod, ctr)); diff != "" {
					t.Errorf("%s's secret files (-want +got):\n%s", c.name, diff)
				}
			}
			var env []string
			for _, e := range container(pod, "wait").Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					env = append(env, e.Name)
				}
			}
			if diff := cmp.Diff(tt.waitEnv, env); diff != "" {
				t.Errorf("wait's secret env (-want +got):\n%s", diff)
			}
			for _, e := range container(pod, "main").Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					t.Errorf("main has secret env %s", e.Name)
				}
			}
		})
	}
}

// secretFiles are the NAME/KEY files ctr sees under /argo/secret, sorted.
func secretFiles(pod *corev1.Pod, ctr *corev1.Container) []string {
	var out []string
	for _, m := range ctr.VolumeMounts {
		name, ok := strings.CutPrefix(m.MountPath, workflow.ArgoSecretsPath+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil || v.Secret.SecretName != name || !m.ReadOnly {
				continue
			}
			for _, it := range v.Secret.Items {
				out = append(out, path.Join(name, it.Path))
			}
		}
	}
	slices.Sort(out)
	return out
}
