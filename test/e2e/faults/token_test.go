//go:build e2e

package faults

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The token case stands in for the kubelet's rotation of the projected service-account token,
// which this testbed cannot make happen inside the suite's time: the API server refuses a
// token shorter than 10 minutes, and the kubelet renews one at 80% of its life. So the test
// mounts its own service-account directory into wait (token, ca.crt, namespace; the pod's own
// token is not mounted), starts with a token of the overlay's service account, and rotates it
// while wait waits: it writes a token of a second service account with the same grants, and
// deletes the first, whose tokens the API server then refuses (401). wait reports only if it
// reads the file again.
const (
	saDir     = "/var/run/secrets/kubernetes.io/serviceaccount"
	saName    = "argoexec"
	saRotated = "argoexec-rotated"
)

// tokenFile is one step's service-account directory on the node.
type tokenFile struct {
	e   *framework.StepEnv
	dir string
}

// token is a one-hour token of service account sa in namespace ns.
func token(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, sa string) string {
	t.Helper()
	exp := int64(3600)
	tok, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", sa, err)
	}
	return tok.Status.Token
}

func (tf *tokenFile) write(t *testing.T, name, content string) {
	t.Helper()
	tmp := filepath.Join(tf.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(tf.dir, name)); err != nil {
		t.Fatal(err)
	}
}

// mountTokenDir gives wait a service-account directory the test controls, holding a token of
// the overlay's service account.
func mountTokenDir(ctx context.Context, t *testing.T, s *step, pod *corev1.Pod) {
	dir, err := os.MkdirTemp("", "argoexec-faults-sa-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(s.e.F.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	tf := &tokenFile{e: s.e, dir: dir}
	tf.write(t, "ca.crt", string(ca))
	tf.write(t, "namespace", s.e.F.Namespace)
	tf.write(t, "token", token(ctx, t, s.e.F.Client, s.e.F.Namespace, saName))
	s.tokens = tf
	no := false
	pod.Spec.AutomountServiceAccountToken = &no
	hostDir := corev1.HostPathDirectory
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "sa-token",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostDir}}})
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == wf.WaitContainerName {
			pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts,
				corev1.VolumeMount{Name: "sa-token", MountPath: saDir, ReadOnly: true})
		}
	}
}

// grantRotated makes the second service account and binds it wherever the first is bound.
func grantRotated(ctx context.Context, t *testing.T, e *framework.StepEnv) {
	t.Helper()
	c := e.F.Client
	ns := e.F.Namespace
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: saRotated}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: ns}
	second := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: saRotated, Namespace: ns}
	rbs, err := c.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rb := range rbs.Items {
		if slices.Contains(rb.Subjects, first) {
			rb.Subjects = append(rb.Subjects, second)
			if _, err := c.RbacV1().RoleBindings(ns).Update(ctx, &rb, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	crbs, err := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rb := range crbs.Items {
		if slices.Contains(rb.Subjects, first) {
			rb.Subjects = append(rb.Subjects, second)
			if _, err := c.RbacV1().ClusterRoleBindings().Update(ctx, &rb, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// rotate writes the second service account's token and deletes the first service account
// (its tokens are refused from then on); the first is made again when the test ends, for the
// cases after it (a new UID: the old tokens stay refused).
func (tf *tokenFile) rotate(ctx context.Context, t *testing.T) {
	t.Helper()
	tf.write(t, "token", token(ctx, t, tf.e.F.Client, tf.e.F.Namespace, saRotated))
	sas := tf.e.F.Client.CoreV1().ServiceAccounts(tf.e.F.Namespace)
	if err := sas.Delete(ctx, saName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = sas.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: saName}}, metav1.CreateOptions{})
	})
}
