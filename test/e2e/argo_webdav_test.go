//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The argo tier's artifactory cases store in startWebDAV's server (nginx_webdav_test.go).

// The Secrets the store cases name, made in each controller's namespace by argoStoreSecrets:
// the WebDAV server's user and password, the same user with a wrong password, and S3 keys the
// testbed's S3 does not know.
const (
	argoWebDAVSecret    = "argo-e2e-webdav"
	argoWebDAVBadSecret = "argo-e2e-webdav-bad"
	argoS3BadSecret     = "argo-e2e-s3-bad"
)

// argoStoreSecrets is the setup of the artifactory and oss cases: it makes their Secrets.
func argoStoreSecrets(t *testing.T, a *framework.Argo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, data := range map[string]map[string]string{
		argoWebDAVSecret:    {"user": webdavUser, "password": webdavPassword},
		argoWebDAVBadSecret: {"user": webdavUser, "password": "not-" + webdavPassword},
		argoS3BadSecret:     {"accesskey": "NOSUCHKEY", "secretkey": "not-a-secret-key"},
	} {
		if err := a.EnsureSecret(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
}
