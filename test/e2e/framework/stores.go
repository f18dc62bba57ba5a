//go:build e2e

package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Reading back what the artifactory and oss stores hold, for Collect: an artifactory artifact
// from its URL with the credentials its own Secrets hold, an oss one from the testbed's S3,
// which is the OSS endpoint the argo tier's oss cases name.

// fetchArtifactoryArtifact GETs an artifactory artifact's URL and unpacks it as fetchArtifact
// does. loc is the artifact's artifactory location as the controller reported it; def, the
// template's archiveLocation.artifactory, fills what loc lacks as Argo's Relocate does (a URL
// that is a path alone takes def's scheme and host; no usernameSecret takes def's secrets). The
// basic-auth user and password are read from the Kubernetes Secrets they name, in the
// controller's namespace. It returns the files and the URL's path, the artifact's key.
func (a *Argo) fetchArtifactoryArtifact(ctx context.Context, loc, def map[string]any) (map[string]string, string, error) {
	raw, _, _ := unstructured.NestedString(loc, "url")
	u, err := url.Parse(raw)
	if err != nil {
		return nil, raw, err
	}
	secrets := loc
	if _, ok := loc["usernameSecret"]; !ok && def != nil {
		secrets = def
	}
	if u.Host == "" && def != nil {
		defURL, _, _ := unstructured.NestedString(def, "url")
		d, err := url.Parse(defURL)
		if err != nil {
			return nil, raw, fmt.Errorf("the archiveLocation's url %q: %w", defURL, err)
		}
		u.Scheme, u.Host, u.User = d.Scheme, d.Host, d.User
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, u.Path, err
	}
	if _, ok := secrets["usernameSecret"]; ok {
		user, err := a.secretValue(ctx, secrets, "usernameSecret")
		if err != nil {
			return nil, u.Path, err
		}
		pass, err := a.secretValue(ctx, secrets, "passwordSecret")
		if err != nil {
			return nil, u.Path, err
		}
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, u.Path, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, u.Path, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, u.Path, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	files, err := archiveFiles(data)
	return files, u.Path, err
}

// secretValue reads the key of the Secret that loc's field (a SecretKeySelector) names, in the
// controller's namespace.
func (a *Argo) secretValue(ctx context.Context, loc map[string]any, field string) (string, error) {
	name, _, _ := unstructured.NestedString(loc, field, "name")
	key, _, _ := unstructured.NestedString(loc, field, "key")
	s, err := a.Client.CoreV1().Secrets(a.Controller.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	v, ok := s.Data[key]
	if !ok {
		return "", fmt.Errorf("%s: secret %s/%s has no key %q", field, a.Controller.Namespace, name, key)
	}
	return string(v), nil
}

// fetchOSSArtifact reads an oss artifact from the testbed's S3 as fetchArtifact does: the argo
// tier's oss cases name that server as their OSS endpoint, and an artifact at another endpoint
// is an error. loc is the artifact's oss location; def, the template's archiveLocation.oss,
// gives the endpoint and bucket when loc has none (Argo's Relocate). It returns the files and
// the key.
func (a *Argo) fetchOSSArtifact(ctx context.Context, loc, def map[string]any) (map[string]string, string, error) {
	key, _, _ := unstructured.NestedString(loc, "key")
	endpoint, _, _ := unstructured.NestedString(loc, "endpoint")
	bucket, _, _ := unstructured.NestedString(loc, "bucket")
	if (endpoint == "" || bucket == "") && def != nil {
		endpoint, _, _ = unstructured.NestedString(def, "endpoint")
		bucket, _, _ = unstructured.NestedString(def, "bucket")
	}
	s3, err := url.Parse(a.Env.S3Endpoint)
	if err != nil {
		return nil, key, err
	}
	if host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://"), "/"); host != s3.Host {
		return nil, key, fmt.Errorf("oss endpoint %q is not the testbed's S3 (%s), the only OSS endpoint the tier reads", endpoint, s3.Host)
	}
	files, err := a.fetchArtifact(ctx, bucket, key)
	return files, key, err
}

// RepositoryBucket is the bucket of the controller's artifact repository (the s3 of its
// ConfigMap's artifactRepository).
func (a *Argo) RepositoryBucket(ctx context.Context) (string, error) {
	cm, err := a.Client.CoreV1().ConfigMaps(a.Controller.Namespace).Get(ctx, "workflow-controller-configmap", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var repo struct {
		S3 struct {
			Bucket string `json:"bucket"`
		} `json:"s3"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["artifactRepository"]), &repo); err != nil {
		return "", fmt.Errorf("%s/workflow-controller-configmap: artifactRepository: %w", a.Controller.Namespace, err)
	}
	if repo.S3.Bucket == "" {
		return "", fmt.Errorf("%s/workflow-controller-configmap: artifactRepository has no s3.bucket", a.Controller.Namespace)
	}
	return repo.S3.Bucket, nil
}

// EnsureSecret makes the Secret name with data in the controller's namespace, or sets data on
// the one that is there.
func (a *Argo) EnsureSecret(ctx context.Context, name string, data map[string]string) error {
	secrets := a.Client.CoreV1().Secrets(a.Controller.Namespace)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
	_, err := secrets.Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *corev1.Secret
		if old, err = secrets.Get(ctx, name, metav1.GetOptions{}); err == nil {
			old.Data, old.StringData = nil, data
			_, err = secrets.Update(ctx, old, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", a.Controller.Namespace, name, err)
	}
	return nil
}
