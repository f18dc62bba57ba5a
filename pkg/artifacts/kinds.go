package artifacts

import (
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Kind is one artifact store argoexec implements, registered once in
// Kinds: the location field it serves and how its driver is built from
// what the controller passed. A new store is its driver and one line in
// Kinds.
type Kind struct {
	// Name is the location's field in Argo's ArtifactLocation
	// (workflow.KindS3 ...).
	Name string
	// Save says whether outputs can be stored there; http and raw
	// locations can only be loaded.
	Save bool
	// New builds the kind's driver; a nil Driver means env configures no
	// store of this kind (our controller passed no repository of it), and
	// its artifacts are refused saying so.
	New func(env Env) (Driver, error)
}

// Env is what the controller protocol passes every driver: the default
// location (Argo's archiveLocation, our ConfigMap's repository), whose
// fields fill what an artifact's own location leaves out, and where the
// credentials come from.
type Env struct {
	// Default is the repository; its zero value means none.
	Default wf.ArtifactLocation
	// Credentials resolve the secrets a location names.
	Credentials Credentials
	// RepositoryOnly allows, in each store, only the default location's
	// bucket (s3, gcs, oss) or URLs under its URL (artifactory): the pod
	// holds only the repository's credentials. With no default of a kind,
	// that kind is not configured.
	RepositoryOnly bool
	// Log says what the drivers do.
	Log *logrus.Entry
	// Git loads git inputs (GitCommand); nil means no git store.
	Git Driver
	// GCS is where the gcs store's emulator and metadata server are, if
	// not Google's.
	GCS GCSEndpoints
}

// Kinds are the stores argoexec implements, one line each.
func Kinds() []Kind {
	return []Kind{
		{Name: wf.KindS3, Save: true, New: newS3Kind},
		{Name: wf.KindHTTP, New: func(env Env) (Driver, error) { return NewHTTP(HTTPConfig{}, env.Log), nil }},
		{Name: wf.KindRaw, New: func(Env) (Driver, error) { return raw{}, nil }},
		{Name: wf.KindGit, New: func(env Env) (Driver, error) { return env.Git, nil }},
		{Name: wf.KindArtifactory, Save: true, New: newArtifactoryKind},
		{Name: wf.KindOSS, Save: true, New: newOSSKind},
		{Name: wf.KindGCS, Save: true, New: newGCSKind},
	}
}

// newArtifactoryKind is the artifactory store of env, with the secrets
// env's credentials can read (SecretFiles); under RepositoryOnly, only
// with an artifactory default, and only for URLs under its URL (the
// repository's repoURL).
func newArtifactoryKind(env Env) (Driver, error) {
	if env.RepositoryOnly && env.Default.Artifactory == nil {
		return nil, nil
	}
	secrets, _ := env.Credentials.(SecretReader)
	return NewArtifactory(ArtifactoryConfig{Default: env.Default.Artifactory, Secrets: secrets, RepositoryOnly: env.RepositoryOnly}, env.Log), nil
}

// newOSSKind is the oss store of env; under RepositoryOnly, only with an
// oss default, and only for its endpoint and bucket.
func newOSSKind(env Env) (Driver, error) {
	if env.RepositoryOnly && env.Default.OSS == nil {
		return nil, nil
	}
	return NewOSS(OSSConfig{Default: env.Default.OSS, Credentials: env.Credentials, RepositoryOnly: env.RepositoryOnly}, env.Log), nil
}

// newGCSKind is the gcs store of env, with the secrets env's credentials
// can read (SecretFiles); under RepositoryOnly, only with a gcs default,
// whose bucket and credentials every artifact then uses.
func newGCSKind(env Env) (Driver, error) {
	if env.RepositoryOnly && env.Default.GCS == nil {
		return nil, nil
	}
	secrets, _ := env.Credentials.(SecretReader)
	return NewGCS(GCSConfig{Default: env.Default.GCS, Secrets: secrets, Endpoints: env.GCS, RepositoryOnly: env.RepositoryOnly}, env.Log), nil
}

// newS3Kind is the s3 store of env: the default bucket and keys, limited
// to that bucket when env says so.
func newS3Kind(env Env) (Driver, error) {
	def := env.Default.S3
	if def == nil && env.RepositoryOnly {
		return nil, nil
	}
	cfg := S3Config{Credentials: env.Credentials}
	if def != nil {
		cfg.Default = def.S3Bucket
	}
	return NewS3(cfg, env.Log)
}

// NewStoreFor returns a Store with a driver of every kind env configures.
func NewStoreFor(env Env) (*Store, error) {
	cfg := StoreConfig{Drivers: map[string]Driver{}}
	for _, k := range Kinds() {
		d, err := k.New(env)
		if err != nil {
			return nil, fmt.Errorf("%s store: %w", k.Name, err)
		}
		if d != nil {
			cfg.Drivers[k.Name] = d
		}
	}
	if s3 := env.Default.S3; s3 != nil && env.RepositoryOnly {
		cfg.Allow = RepositoryOnly(s3.S3Bucket)
	}
	return NewStore(cfg, env.Log), nil
}

// kindNames lists what Kinds implements, for messages: all of them, or
// those that can save.
func kindNames(save bool) string {
	var names []string
	for _, k := range Kinds() {
		if !save || k.Save {
			names = append(names, k.Name)
		}
	}
	return strings.Join(names, ", ")
}

// kindOf is the registered Kind called name.
func kindOf(name string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}
