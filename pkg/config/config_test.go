package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

func TestDefaults(t *testing.T) {
	for _, in := range []string{"", "{}\n"} {
		c, err := ParseConfig([]byte(in), testBackends())
		if err != nil {
			t.Fatalf("ParseConfig(%q): %v", in, err)
		}
		want := &Config{
			ContainerRuntimeExecutor: "k8sapi",
			KubeletPort:              10250,
			SidecarMode:              "native",
			DockerSockPath:           "/var/run/docker.sock",
			EmissaryImageVolume:      "auto",
			Executor:                 corev1.Container{Image: "argoexec:dev"},
		}
		if diff := cmp.Diff(want, c); diff != "" {
			t.Errorf("defaults (-want +got):\n%s", diff)
		}
	}
}

// TestGCSRepository: a gcs repository is accepted, its keyFormat defaulted
// as s3's.
func TestGCSRepository(t *testing.T) {
	c, err := ParseConfig([]byte("artifactRepository:\n  gcs: {bucket: b, serviceAccountKeySecret: {name: sa, key: key.json}}\n"), testBackends())
	if err != nil {
		t.Fatal(err)
	}
	gcs := c.ArtifactRepository.GCS
	if gcs == nil || gcs.Bucket != "b" || gcs.KeyFormat != workflow.DefaultKeyFormat || gcs.ServiceAccountKeySecret.Key != "key.json" {
		t.Errorf("artifactRepository.gcs = %+v", gcs)
	}
}

// TestFileSecretRepositories: Argo's artifactory and oss repositories, and
// archiveLogs with one, load with Argo's field names.
func TestFileSecretRepositories(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		check      func(t *testing.T, r workflow.ArtifactRepository)
	}{
		{"artifactory", "artifactRepository:\n  archiveLogs: true\n  artifactory: {repoURL: 'https://rt.example/generic', usernameSecret: {name: rt, key: user}, passwordSecret: {name: rt, key: pass}}\n",
			func(t *testing.T, r workflow.ArtifactRepository) {
				if a := r.Artifactory; a == nil || a.RepoURL != "https://rt.example/generic" || a.PasswordSecret.Key != "pass" || r.ArchiveLogs == nil || !*r.ArchiveLogs {
					t.Errorf("artifactRepository = %+v", r)
				}
			}},
		{"oss, keyFormat defaulted", "artifactRepository:\n  oss: {endpoint: 'http://oss:7070', bucket: b, accessKeySecret: {name: o, key: a}, secretKeySecret: {name: o, key: s}}\n",
			func(t *testing.T, r workflow.ArtifactRepository) {
				if o := r.OSS; o == nil || o.Bucket != "b" || o.KeyFormat != workflow.DefaultKeyFormat || o.SecretKeySecret.Key != "s" {
					t.Errorf("artifactRepository.oss = %+v", o)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tt.yaml), testBackends())
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c.ArtifactRepository)
		})
	}
}

func TestParseFull(t *testing.T) {
	c, err := LoadFile(filepath.Join("testdata", "configmap.yaml"), testBackends())
	if err != nil {
		t.Fatal(err)
	}
	if c.ContainerRuntimeExecutor != "kubelet" || c.KubeletPort != 10250 || c.KubeletCAFile != "/var/lib/kubelet/pki/kubelet.crt" {
		t.Errorf("kubelet settings = %q %d %q", c.ContainerRuntimeExecutor, c.KubeletPort, c.KubeletCAFile)
	}
	if len(c.ContainerRuntimeExecutors) != 2 || c.ContainerRuntimeExecutors[1].Name != "k8sapi" {
		t.Errorf("containerRuntimeExecutors = %+v", c.ContainerRuntimeExecutors)
	}
	if c.Executor.Image != "registry.local/argoexec:v1" || c.Executor.ImagePullPolicy != corev1.PullIfNotPresent ||
		c.Executor.Resources.Limits.Memory().String() != "128Mi" || len(c.Executor.Args) != 1 {
		t.Errorf("executor = %+v", c.Executor)
	}
	s3 := c.ArtifactRepository.S3
	if s3 == nil || s3.Bucket != "artifacts" || s3.KeyFormat != workflow.DefaultKeyFormat || s3.AccessKeySecret.Key != "accesskey" {
		t.Errorf("artifactRepository.s3 = %+v", s3)
	}
}

func TestParseBareEqualsConfigMap(t *testing.T) {
	fromCM, err := LoadFile(filepath.Join("testdata", "configmap.yaml"), testBackends())
	if err != nil {
		t.Fatal(err)
	}
	bare, err := LoadFile(filepath.Join("testdata", "bare.yaml"), testBackends())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromCM, bare); diff != "" {
		t.Errorf("bare config differs from ConfigMap (-cm +bare):\n%s", diff)
	}
}

// TestBadInput feeds one bad key at a time and checks that the error names it.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // every string must appear in the error
	}{
		{"misspelt executor", "containerRuntimeExecutor: dokcer\n",
			[]string{`containerRuntimeExecutor: unknown executor "dokcer" (want docker, k8sapi or kubelet)`}},
		{"port not a number", "kubeletPort: ten\n", []string{"kubeletPort"}},
		{"insecure not a bool", "kubeletInsecure: maybe\n", []string{"kubeletInsecure"}},
		{"unknown top-level key", "kubeletPrt: 10250\n", []string{`unknown field "kubeletPrt"`}},
		{"unknown nested key", "executor:\n  imag: x\n", []string{`unknown field "executor.imag"`}},
		{"duplicate key", "kubeletPort: 1\nkubeletPort: 2\n", []string{`"kubeletPort" already set`}},
		{"sidecar mode", "sidecarMode: sidecar\n", []string{`sidecarMode: unknown mode "sidecar" (want native or legacy)`}},
		{"selector backend", "containerRuntimeExecutors:\n- name: emisary\n  selector: {matchLabels: {a: b}}\n",
			[]string{`containerRuntimeExecutors[0].name: unknown executor "emisary" (want docker, k8sapi or kubelet)`}},
		{"default is Argo's emissary", "containerRuntimeExecutor: emissary\n",
			[]string{`containerRuntimeExecutor: executor "emissary" is Argo's, not implemented by argoexec (it implements docker, k8sapi or kubelet)`}},
		{"selector without name", "containerRuntimeExecutors:\n- selector: {matchLabels: {a: b}}\n",
			[]string{`containerRuntimeExecutors[0].name: unknown executor ""`}},
		{"empty selector", "containerRuntimeExecutors:\n- name: docker\n  selector: {matchLabels: {a: b}}\n- name: kubelet\n  selector: {}\n",
			[]string{"containerRuntimeExecutors[1].selector: empty selector"}},
		{"bad selector operator", "containerRuntimeExecutors:\n- name: docker\n  selector:\n    matchExpressions: [{key: a, operator: Near, values: [b]}]\n",
			[]string{"containerRuntimeExecutors[0].selector:", "Near"}},
		{"bad selector label value", "containerRuntimeExecutors:\n- name: docker\n  selector: {matchLabels: {a: 'b c'}}\n",
			[]string{"containerRuntimeExecutors[0].selector:"}},
		{"unknown selector field", "containerRuntimeExecutors:\n- name: docker\n  selector: {matchLabel: {a: b}}\n",
			[]string{`unknown field "containerRuntimeExecutors[0].selector.matchLabel"`}},
		{"executor name", "executor:\n  name: argoexec\n", []string{`executor.name: "argoexec" is not allowed`}},
		{"executor pull policy", "executor:\n  imagePullPolicy: Sometimes\n", []string{`executor.imagePullPolicy: unknown policy "Sometimes"`}},
		{"executor reserved env", "executor:\n  env: [{name: FOO, value: x}, {name: ARGO_POD_NAME, value: x}]\n", []string{"executor.env[1].name: ARGO_POD_NAME is reserved"}},
		{"executor volume mounts", "executor:\n  volumeMounts: [{name: x, mountPath: /x}]\n", []string{"executor.volumeMounts: not supported"}},
		{"executor bad quantity", "executor:\n  resources: {limits: {memory: lots}}\n",
			[]string{`executor.resources.limits.memory: "lots" is not a quantity; want a quantity, such as 500m, 2 or 128Mi`}},
		{"s3 without bucket", "artifactRepository:\n  s3: {endpoint: minio:9000}\n", []string{"artifactRepository.s3.bucket: must be set"}},
		{"s3 without endpoint", "artifactRepository:\n  s3: {bucket: b}\n", []string{"artifactRepository.s3.endpoint: must be set"}},
		{"s3 endpoint with scheme", "artifactRepository:\n  s3: {bucket: b, endpoint: 'http://minio:9000'}\n", []string{"artifactRepository.s3.endpoint:", "without a scheme"}},
		{"s3 secret without key", "artifactRepository:\n  s3: {bucket: b, endpoint: e, accessKeySecret: {name: s}, secretKeySecret: {name: s, key: k}}\n",
			[]string{"artifactRepository.s3.accessKeySecret.key: must be set"}},
		{"s3 one secret only", "artifactRepository:\n  s3: {bucket: b, endpoint: e, accessKeySecret: {name: s, key: k}}\n",
			[]string{"artifactRepository.s3: set both accessKeySecret and secretKeySecret"}},
		{"s3 key format variable", "artifactRepository:\n  s3: {bucket: b, endpoint: e, keyFormat: '{{workflow.uid}}/{{artifact.name}}'}\n",
			[]string{"artifactRepository.s3.keyFormat: unknown variable workflow.uid"}},
		{"unknown s3 field", "artifactRepository:\n  s3: {bucket: b, endpoint: e, bukket: c}\n", []string{`unknown field "artifactRepository.s3.bukket"`}},
		{"two bad keys", "containerRuntimeExecutor: x\nsidecarMode: x\n", []string{`unknown executor "x"`, "sidecarMode: unknown mode"}},
		{"not a map", "- kubeletPort\n", []string{"want a map of keys"}},
		{"archiveLogs without a repository", "artifactRepository: {archiveLogs: true}\n", []string{"artifactRepository.archiveLogs: true, but there is no repository to save main's log to"}},
		{"gcs without bucket", "artifactRepository: {gcs: {keyFormat: k}}\n", []string{"artifactRepository.gcs.bucket: must be set"}},
		{"gcs secret without key", "artifactRepository: {gcs: {bucket: b, serviceAccountKeySecret: {name: s}}}\n", []string{"artifactRepository.gcs.serviceAccountKeySecret.key: must be set"}},
		{"gcs key format variable", "artifactRepository: {gcs: {bucket: b, keyFormat: '{{workflow.uid}}'}}\n", []string{"artifactRepository.gcs.keyFormat: unknown variable workflow.uid"}},
		{"s3 and gcs", "artifactRepository: {gcs: {bucket: b}, s3: {bucket: b, endpoint: e}}\n", []string{"artifactRepository: s3, gcs are set: outputs go to one repository"}},
		{"oss and artifactory", "artifactRepository: {oss: {bucket: b, endpoint: e}, artifactory: {repoURL: 'http://rt/x'}}\n", []string{"artifactRepository: artifactory, oss are set"}},
		{"hdfs repository", "artifactRepository: {hdfs: {pathFormat: p}}\n", []string{"artifactRepository.hdfs: not supported by argoexec-step", "argoexec has no hdfs store"}},
		{"artifactory without a URL", "artifactRepository: {artifactory: {usernameSecret: {name: rt, key: u}}}\n", []string{`artifactRepository.artifactory.repoURL: "" is not an absolute http(s) URL`, "set both usernameSecret and passwordSecret, or neither"}},
		{"artifactory with a relative URL", "artifactRepository: {artifactory: {repoURL: rt/generic}}\n", []string{`artifactRepository.artifactory.repoURL: "rt/generic" is not an absolute http(s) URL`}},
		{"artifactory secret without a key", "artifactRepository: {artifactory: {repoURL: 'http://rt', usernameSecret: {name: rt}, passwordSecret: {name: rt, key: p}}}\n", []string{"artifactRepository.artifactory.usernameSecret.key: must be set"}},
		{"oss keyFormat", "artifactRepository: {oss: {bucket: b, endpoint: e, keyFormat: '{{workflow.uid}}'}}\n", []string{"artifactRepository.oss.keyFormat: unknown variable workflow.uid"}},
		{"oss one key secret", "artifactRepository: {oss: {bucket: b, endpoint: e, accessKeySecret: {name: o, key: a}}}\n", []string{"artifactRepository.oss: set both accessKeySecret and secretKeySecret, or neither"}},
		{"oss repository", "artifactRepository: {oss: {bucket: b}}\n", []string{"artifactRepository.oss.endpoint: must be set"}},
		{"s3 roleARN", "artifactRepository:\n  s3: {bucket: b, endpoint: e, roleARN: 'arn:x'}\n", []string{"artifactRepository.s3.roleARN: not supported by argoexec-step"}},
		{"s3 useSDKCreds", "artifactRepository:\n  s3: {bucket: b, endpoint: e, useSDKCreds: true}\n", []string{"artifactRepository.s3.useSDKCreds: not supported"}},
		{"s3 encryption", "artifactRepository:\n  s3: {bucket: b, endpoint: e, encryptionOptions: {enableEncryption: true}}\n", []string{"artifactRepository.s3.encryptionOptions: not supported"}},
		{"s3 create bucket", "artifactRepository:\n  s3: {bucket: b, endpoint: e, createBucketIfNotPresent: {}}\n", []string{"artifactRepository.s3.createBucketIfNotPresent: not supported"}},
		{"s3 key prefix", "artifactRepository:\n  s3: {bucket: b, endpoint: e, keyPrefix: p}\n", []string{"artifactRepository.s3.keyPrefix: not supported", "use keyFormat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.in), testBackends())
			if err == nil {
				t.Fatalf("ParseConfig(%q) succeeded, want an error naming %q", tc.in, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestErrorsInTheUsersTerms: a value of the wrong kind is reported by its
// key's path, what was given and what is wanted, never as Go's decoder
// says it ("cannot unmarshal string into Go struct field"), in both
// layouts; executor.image "" is refused rather than silently defaulted.
func TestErrorsInTheUsersTerms(t *testing.T) {
	for _, tc := range []struct {
		name   string
		legacy string            // the config key's YAML
		perKey map[string]string // the same in Argo's per-key layout
		want   string
	}{
		{name: "quoted port", legacy: "kubeletPort: \"10250\"\n", perKey: map[string]string{"kubeletPort": `"10250"`},
			want: `kubeletPort: "10250" is a string; want a whole number: write kubeletPort: 10250, without quotes`},
		{name: "port in words", legacy: "kubeletPort: ten\n", perKey: map[string]string{"kubeletPort": "ten"},
			want: `kubeletPort: "ten" is a string; want a whole number`},
		{name: "fractional port", legacy: "kubeletPort: 1.5\n", perKey: map[string]string{"kubeletPort": "1.5"},
			want: `kubeletPort: 1.5 is a number; want a whole number`},
		{name: "quoted boolean", legacy: "kubeletInsecure: \"true\"\n", perKey: map[string]string{"kubeletInsecure": `"true"`},
			want: `kubeletInsecure: "true" is a string; want true or false: write kubeletInsecure: true, without quotes`},
		{name: "boolean in words", legacy: "kubeletInsecure: maybe\n", perKey: map[string]string{"kubeletInsecure": "maybe"},
			want: `kubeletInsecure: "maybe" is a string; want true or false`},
		{name: "a map for a list", legacy: "containerRuntimeExecutors: {name: docker}\n", perKey: map[string]string{"containerRuntimeExecutors": "name: docker\n"},
			want: `containerRuntimeExecutors: {"name":"docker"} is a map; want a list`},
		{name: "nested, in a list", legacy: "containerRuntimeExecutors:\n- name: [docker]\n", perKey: map[string]string{"containerRuntimeExecutors": "- name: [docker]\n"},
			want: `containerRuntimeExecutors[0].name: ["docker"] is a list; want a string`},
		{name: "nested in the executor's inlined container", legacy: "executor:\n  imagePullPolicy: 3\n", perKey: map[string]string{"executor": "imagePullPolicy: 3\n"},
			want: `executor.imagePullPolicy: 3 is a number; want a string`},
		{name: "deep in the repository", legacy: "artifactRepository:\n  s3: {bucket: 5, endpoint: e}\n", perKey: map[string]string{"artifactRepository": "s3: {bucket: 5, endpoint: e}\n"},
			want: `artifactRepository.s3.bucket: 5 is a number; want a string`},
		{name: "empty executor image", legacy: "executor:\n  image: \"\"\n", perKey: map[string]string{"executor": "image: \"\"\n"},
			want: `executor.image: empty: name the argoexec image (such as argoexec:dev), or leave the key out for that default`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for layout, data := range map[string]map[string]string{"config key": {ConfigKey: tc.legacy}, "per-key": tc.perKey} {
				_, err := FromConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wcc", Namespace: "argo"}, Data: data}, testBackends())
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s layout: error %v\nwant it to contain %q", layout, err, tc.want)
				}
				if err != nil && strings.Contains(err.Error(), "Go struct") {
					t.Errorf("%s layout: error %v speaks Go", layout, err)
				}
			}
		})
	}
}

// TestPerKeyLayout checks that Argo's per-key layout gives the same
// configuration as the legacy config key, with Argo's unused keys listed.
func TestPerKeyLayout(t *testing.T) {
	legacy, err := LoadFile(filepath.Join("testdata", "configmap.yaml"), testBackends())
	if err != nil {
		t.Fatal(err)
	}
	perKey, err := LoadFile(filepath.Join("testdata", "per-key.yaml"), testBackends())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"images", "instanceID", "mainContainer", "parallelism"}, perKey.Ignored); diff != "" {
		t.Errorf("Ignored (-want +got):\n%s", diff)
	}
	perKey.Ignored = nil
	perKey.ArtifactRepository.ArchiveLogs = nil // false: accepted, nothing to do
	if diff := cmp.Diff(legacy, perKey); diff != "" {
		t.Errorf("per-key layout differs from the config key (-config +per-key):\n%s", diff)
	}
}

func TestFromConfigMap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    map[string]string
		check   func(*Config) string
		wantErr []string
	}{
		{name: "no data", check: func(c *Config) string { return diffOrEmpty(Default(), c) }},
		{name: "one per-key setting", data: map[string]string{"containerRuntimeExecutor": "kubelet"},
			check: func(c *Config) string {
				if c.ContainerRuntimeExecutor != "kubelet" || c.KubeletPort != workflow.DefaultKubeletPort {
					return "got " + c.ContainerRuntimeExecutor
				}
				return ""
			}},
		{name: "per-key numbers and booleans", data: map[string]string{"kubeletPort": "10255", "kubeletInsecure": "true"},
			check: func(c *Config) string {
				if c.KubeletPort != 10255 || !c.KubeletInsecure {
					return "kubelet settings not read"
				}
				return ""
			}},
		{name: "legacy with Argo's keys", data: map[string]string{"config": "containerRuntimeExecutor: docker\nmainContainer: {imagePullPolicy: IfNotPresent}\nsso: {}\n"},
			check: func(c *Config) string {
				if c.ContainerRuntimeExecutor != "docker" || !cmp.Equal(c.Ignored, []string{"mainContainer", "sso"}) {
					return "got " + c.ContainerRuntimeExecutor + " " + strings.Join(c.Ignored, ",")
				}
				return ""
			}},
		{name: "empty value is unset", data: map[string]string{"dockerSockPath": ""},
			check: func(c *Config) string { return diffOrEmpty(Default(), c) }},
		{name: "both layouts", data: map[string]string{"config": "kubeletPort: 1\n", "kubeletPort": "2", "sidecarMode": "legacy"},
			wantErr: []string{"ConfigMap argo/wcc: key config and the per-key layout's kubeletPort, sidecarMode together"}},
		{name: "unknown per-key key", data: map[string]string{"containerRuntimeExecuter": "kubelet"},
			wantErr: []string{`ConfigMap argo/wcc (per-key layout): parse config: unknown field "containerRuntimeExecuter"`}},
		{name: "unknown legacy key", data: map[string]string{"config": "kubeletPrt: 1\n"},
			wantErr: []string{`key config: parse config: unknown field "kubeletPrt"`}},
		{name: "bad per-key YAML", data: map[string]string{"executor": "image: [\n"},
			wantErr: []string{"key executor: parse its value as YAML"}},
		{name: "bad per-key value", data: map[string]string{"kubeletPort": "seventy"},
			wantErr: []string{"kubeletPort"}},
		{name: "unknown field in a per-key value", data: map[string]string{"executor": "imag: x\n"},
			wantErr: []string{`unknown field "executor.imag"`}},
		{name: "invalid per-key value", data: map[string]string{"containerRuntimeExecutor": "emissary"},
			wantErr: []string{`containerRuntimeExecutor: executor "emissary" is Argo's, not implemented`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wcc", Namespace: "argo"}, Data: tc.data}, testBackends())
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("FromConfigMap succeeded, want an error containing %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("FromConfigMap: %v", err)
			}
			if msg := tc.check(c); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func diffOrEmpty(want, got *Config) string { return cmp.Diff(want, got) }

func TestParseConfigMapErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"wrong kind", "apiVersion: v1\nkind: Secret\n", "kind Secret"},
		{"bad config key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: workflow-controller-configmap, namespace: argo}\ndata:\n  config: |\n    kubeletPort: 0x\n",
			"ConfigMap argo/workflow-controller-configmap key config"},
		{"unknown ConfigMap field", "apiVersion: v1\nkind: ConfigMap\ndta: {}\n", `unknown field "dta"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), testBackends())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "nope.yaml"), testBackends())
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("LoadFile of a missing file: error = %v, want not-exist", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestSelect(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
containerRuntimeExecutor: k8sapi
containerRuntimeExecutors:
- name: docker
  selector:
    matchLabels: {runtime: docker}
- name: kubelet
  selector:
    matchExpressions:
    - {key: tier, operator: In, values: [fast, bulk]}
- name: docker
  selector:
    matchExpressions:
    - {key: tier, operator: Exists}
- name: emissary
  selector:
    matchLabels: {runtime: emissary}
- name: pns
  selector:
    matchLabels: {runtime: pns}
`), testBackends())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		want    string
		wantErr string
	}{
		{"no labels: default", nil, "k8sapi", ""},
		{"unrelated labels: default", map[string]string{"app": "x"}, "k8sapi", ""},
		{"first selector", map[string]string{"runtime": "docker"}, "docker", ""},
		{"second selector", map[string]string{"tier": "bulk"}, "kubelet", ""},
		{"order decides", map[string]string{"runtime": "docker", "tier": "fast"}, "docker", ""},
		{"third selector", map[string]string{"tier": "slow"}, "docker", ""},
		{"label beats selectors", map[string]string{workflow.LabelContainerRuntimeExecutor: "k8sapi", "runtime": "docker"}, "k8sapi", ""},
		{"label picks kubelet", map[string]string{workflow.LabelContainerRuntimeExecutor: "kubelet"}, "kubelet", ""},
		{"bad label", map[string]string{workflow.LabelContainerRuntimeExecutor: "dokcer"}, "",
			`label workflows.argoproj.io/container-runtime-executor: unknown executor "dokcer" (want docker, k8sapi or kubelet)`},
		{"label picks Argo's pns", map[string]string{workflow.LabelContainerRuntimeExecutor: "pns"}, "",
			`label workflows.argoproj.io/container-runtime-executor: executor "pns" is Argo's, not implemented by argoexec (it implements docker, k8sapi or kubelet)`},
		{"selector picks Argo's emissary", map[string]string{"runtime": "emissary"}, "",
			`containerRuntimeExecutors[3] (its selector matches the workflow's labels): executor "emissary" is Argo's, not implemented by argoexec`},
		{"selector picks Argo's pns", map[string]string{"runtime": "pns"}, "",
			`containerRuntimeExecutors[4] (its selector matches the workflow's labels): executor "pns" is Argo's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cfg.Select(tc.labels, testBackends())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Select error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Select = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestKeysComplete checks that Keys documents every field of Config and of
// the S3 repository, so the README table generated from it is complete.
func TestKeysComplete(t *testing.T) {
	documented := map[string]bool{}
	for _, k := range Keys() {
		if k.Doc == "" {
			t.Errorf("key %s has no doc", k.Key)
		}
		if documented[k.Key] {
			t.Errorf("key %s listed twice", k.Key)
		}
		documented[k.Key] = true
	}
	var want []string
	want = append(want, jsonNames("", reflect.TypeFor[Config]())...)
	want = append(want, jsonNames("containerRuntimeExecutors[].", reflect.TypeFor[ExecutorSelector]())...)
	want = append(want, jsonNames("artifactRepository.s3.", reflect.TypeFor[workflow.S3ArtifactRepository]())...)
	want = append(want, jsonNames("artifactRepository.", reflect.TypeFor[workflow.ArtifactRepository]())...)
	for _, k := range want {
		if !documented[k] && k != "artifactRepository" && k != "-" {
			t.Errorf("Keys() does not document %s", k)
		}
	}
}

// jsonNames lists the JSON names of t's fields, descending into inlined structs.
func jsonNames(prefix string, t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			names = append(names, jsonNames(prefix, f.Type)...)
			continue
		}
		names = append(names, prefix+name)
	}
	return names
}

// TestArgoQuickStartConfigMap: Argo v3.3.8's quick-start ConfigMap
// (manifests/quick-start/base/overlays/workflow-controller-configmap.yaml,
// copied unchanged) loads: its containerRuntimeExecutors name emissary and
// pns, which are refused only for a workflow they pick; every other
// workflow gets the default backend.
func TestArgoQuickStartConfigMap(t *testing.T) {
	c, err := LoadFile("testdata/argo-v3.3.8-quick-start-configmap.yaml", testBackends())
	if err != nil {
		t.Fatalf("Argo's quick-start ConfigMap: %v", err)
	}
	if got, err := c.Select(map[string]string{"app": "x"}, testBackends()); err != nil || got != workflow.ExecutorK8sAPI {
		t.Errorf("Select(no executor label) = %q, %v; want k8sapi", got, err)
	}
	for _, name := range []string{"emissary", "pns"} {
		_, err := c.Select(map[string]string{workflow.LabelContainerRuntimeExecutor: name}, testBackends())
		if err == nil || !strings.Contains(err.Error(), `executor "`+name+`" is Argo's, not implemented by argoexec`) {
			t.Errorf("Select(label %s) error = %v, want it refused naming it", name, err)
		}
	}
}
