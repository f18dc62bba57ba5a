//go:build e2e

package framework

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/argoexec/argoexec/executor/backends"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// RepoRoot is the repository's top directory (found from this file's path).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// StepEnv is one backend's environment for steps under our controller: a namespace with the
// RBAC of manifests/overlays/<backend>, an S3 bucket with its credentials Secret, and the
// ConfigMap the pods are built from (pkg/podspec).
type StepEnv struct {
	F       *Framework
	Backend string
	Config  *config.Config
	S3      *minio.Client
	Bucket  string
}

// NewStepEnv makes the namespace (with opts), RBAC, bucket and config for backend; all of it
// is removed when the test ends.
func NewStepEnv(t *testing.T, backend string, opts ...Option) *StepEnv {
	t.Helper()
	f := New(t, opts...)
	ApplyOverlay(t, f, backend)
	env := f.Env
	u, err := url.Parse(env.S3Endpoint)
	if err != nil || env.S3AccessKey == "" {
		t.Fatalf("S3 endpoint %q / keys not set (hack/cluster.sh up writes %s/s3.env): %v", env.S3Endpoint, env.State, err)
	}
	s3, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(env.S3AccessKey, env.S3SecretKey, ""), Secure: u.Scheme == "https", Region: env.S3Region})
	if err != nil {
		t.Fatal(err)
	}
	bucket := "e2e-" + f.Namespace
	if len(bucket) > 63 {
		bucket = bucket[:63]
	}
	ctx := f.Context()
	if err := s3.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: env.S3Region}); err != nil {
		t.Fatalf("make bucket %s: %v", bucket, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for o := range s3.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			_ = s3.RemoveObject(ctx, bucket, o.Key, minio.RemoveObjectOptions{})
		}
		_ = s3.RemoveBucket(ctx, bucket)
	})
	if _, err := f.Client.CoreV1().Secrets(f.Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials"},
		StringData: map[string]string{"accesskey": env.S3AccessKey, "secretkey": env.S3SecretKey},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	insecure := u.Scheme != "https"
	cfg := config.Default()
	cfg.ContainerRuntimeExecutor = backend
	cfg.Executor.Image = env.ExecutorImage
	cfg.Executor.ImagePullPolicy = corev1.PullNever
	cfg.Executor.Args = []string{"--loglevel=debug"}
	cfg.ArtifactRepository.S3 = &wf.S3ArtifactRepository{S3Bucket: wf.S3Bucket{
		Endpoint: u.Host, Bucket: bucket, Region: env.S3Region, Insecure: &insecure,
		AccessKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s3-credentials"}, Key: "accesskey"},
		SecretKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s3-credentials"}, Key: "secretkey"},
	}}
	if err := cfg.Validate(backends.All().Config()); err != nil {
		t.Fatalf("test config: %v", err)
	}
	return &StepEnv{F: f, Backend: backend, Config: cfg, S3: s3, Bucket: bucket}
}

// ApplyOverlay renders manifests/overlays/<backend> with kustomize and creates its objects in
// the test's namespace, so the RBAC the tests run under is exactly what the project ships.
// Cluster-scoped objects get the namespace in their name and are deleted at the end.
func ApplyOverlay(t *testing.T, f *Framework, backend string) {
	t.Helper()
	ApplyOverlayWith(t, f, backend, nil)
}

// RuleEdit changes the rules of a Role or ClusterRole (kind, name) of an overlay before it is
// created; the RBAC subtraction test takes grants away with it.
type RuleEdit func(kind, name string, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule

// ApplyOverlayWith is ApplyOverlay with edit, when not nil, applied to each Role's and
// ClusterRole's rules.
func ApplyOverlayWith(t *testing.T, f *Framework, backend string, edit RuleEdit) {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(RepoRoot(), "manifests", "overlays", backend))
	if err != nil {
		t.Fatalf("kustomize build manifests/overlays/%s: %v", backend, err)
	}
	ctx := f.Context()
	for _, r := range res.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.createOverlayObject(ctx, t, r.GetKind(), data, edit); err != nil {
			t.Fatalf("create %s %s from overlay %s: %v", r.GetKind(), r.GetName(), backend, err)
		}
	}
}

func (f *Framework) createOverlayObject(ctx context.Context, t *testing.T, kind string, data []byte, edit RuleEdit) error {
	decode := func(v any) error {
		if err := wf.DecodeStrict(data, v); err != nil {
			return fmt.Errorf("decode %s: %w", data, err)
		}
		return nil
	}
	var err error
	switch kind {
	case "ServiceAccount":
		var o corev1.ServiceAccount
		if err := decode(&o); err != nil {
			return err
		}
		o.Namespace = f.Namespace
		_, err = f.Client.CoreV1().ServiceAccounts(f.Namespace).Create(ctx, &o, metav1.CreateOptions{})
	case "ConfigMap":
		return nil // the tests build their own config
	case "Role":
		var o rbacv1.Role
		if err := decode(&o); err != nil {
			return err
		}
		o.Namespace = f.Namespace
		if edit != nil {
			o.Rules = edit(kind, o.Name, o.Rules)
		}
		_, err = f.Client.RbacV1().Roles(f.Namespace).Create(ctx, &o, metav1.CreateOptions{})
	case "RoleBinding":
		var o rbacv1.RoleBinding
		if err := decode(&o); err != nil {
			return err
		}
		o.Namespace = f.Namespace
		for i := range o.Subjects {
			o.Subjects[i].Namespace = f.Namespace
		}
		_, err = f.Client.RbacV1().RoleBindings(f.Namespace).Create(ctx, &o, metav1.CreateOptions{})
	case "ClusterRole":
		var o rbacv1.ClusterRole
		if err := decode(&o); err != nil {
			return err
		}
		if edit != nil {
			o.Rules = edit(kind, o.Name, o.Rules)
		}
		o.Name += "-" + f.Namespace
		_, err = f.Client.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{})
		name := o.Name
		t.Cleanup(func() {
			_ = f.Client.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	case "ClusterRoleBinding":
		var o rbacv1.ClusterRoleBinding
		if err := decode(&o); err != nil {
			return err
		}
		o.Name += "-" + f.Namespace
		o.RoleRef.Name += "-" + f.Namespace
		for i := range o.Subjects {
			o.Subjects[i].Namespace = f.Namespace
		}
		_, err = f.Client.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
		name := o.Name
		t.Cleanup(func() {
			_ = f.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	default:
		return fmt.Errorf("unexpected kind %s", kind)
	}
	return err
}
