package artifacts

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// The OAuth2 grants the gcs store uses, written here on net/http and
// crypto/rsa (both in the binary already) rather than through
// golang.org/x/oauth2/google, whose token sources hold on to the context
// of their first use and which links Google's metadata and external-account
// packages besides.

// googleTokenURL is where a service-account key without token_uri gets its
// tokens.
const googleTokenURL = "https://oauth2.googleapis.com/token"

// defaultMetadataHost is the GCE metadata server's address.
const defaultMetadataHost = "169.254.169.254"

// metadataTimeout bounds one request to the metadata server, which answers
// in milliseconds where it exists and may swallow packets where it does not.
const metadataTimeout = 5 * time.Second

// gcsToken is one access token, fetched again when it is about to expire.
type gcsToken struct {
	clock clock.PassiveClock
	// fetch gets a new token and how long it lives.
	fetch func(ctx context.Context) (token string, life time.Duration, err error)

	mu     sync.Mutex
	token  string
	expiry time.Time
}

// get returns the cached token, or a new one when it expires within a
// minute.
func (t *gcsToken) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.clock.Now().Before(t.expiry.Add(-time.Minute)) {
		return t.token, nil
	}
	tok, life, err := t.fetch(ctx)
	if err != nil {
		return "", err
	}
	t.token, t.expiry = tok, t.clock.Now().Add(life)
	return tok, nil
}

// token is the bearer token for loc: none for the emulator; from the
// service-account key serviceAccountKeySecret names; else workload
// identity's, from the metadata server.
func (g *GCS) token(ctx context.Context, loc wf.GCSArtifact) (string, error) {
	if g.cfg.Endpoints.EmulatorHost != "" {
		return "", nil // as Google's client: the emulator takes no credentials
	}
	key := ""
	if sel := loc.ServiceAccountKeySecret; sel != nil && sel.Name != "" {
		if g.cfg.Secrets == nil {
			return "", errors.New("serviceAccountKeySecret is set but no secrets are available to this pod's protocol; under Argo's controller the secret is mounted for the executor")
		}
		var err error
		if key, err = g.cfg.Secrets.Secret("gcs.serviceAccountKeySecret", sel); err != nil {
			return "", fmt.Errorf("credentials: %w", err)
		}
	}
	g.mu.Lock()
	t := g.tokens[key]
	if t == nil {
		fetch, err := g.tokenFetcher(key)
		if err != nil {
			g.mu.Unlock()
			return "", err
		}
		t = &gcsToken{clock: g.cfg.Clock, fetch: fetch}
		g.tokens[key] = t
	}
	g.mu.Unlock()
	return t.get(ctx)
}

// tokenFetcher is how tokens are fetched for a service-account key, or
// from the metadata server when key is empty.
func (g *GCS) tokenFetcher(key string) (func(context.Context) (string, time.Duration, error), error) {
	if key == "" {
		host := g.cfg.Endpoints.MetadataHost
		if host == "" {
			host = defaultMetadataHost
		}
		return func(ctx context.Context) (string, time.Duration, error) { return g.metadataToken(ctx, host) }, nil
	}
	sa, err := parseServiceAccountKey([]byte(key))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (string, time.Duration, error) { return g.jwtToken(ctx, sa) }, nil
}

// serviceAccountKey is a service account's JSON key file, as Google Cloud
// downloads it.
type serviceAccountKey struct {
	Type         string `json:"type"`
	ClientEmail  string `json:"client_email"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	TokenURI     string `json:"token_uri"`

	key *rsa.PrivateKey
}

// parseServiceAccountKey reads a JSON key file and its RSA private key.
func parseServiceAccountKey(js []byte) (serviceAccountKey, error) {
	const fix = "the secret named by serviceAccountKeySecret must hold a service account's JSON key file as Google Cloud downloads it (IAM > Service accounts > Keys > Add key > JSON)"
	var sa serviceAccountKey
	if err := json.Unmarshal(js, &sa); err != nil {
		return sa, fmt.Errorf("credentials: the service-account key is not JSON (%v); %s", err, fix)
	}
	if sa.Type != "service_account" {
		return sa, fmt.Errorf("credentials: the key's type is %q, not \"service_account\" (as Argo's argoexec, gcs takes a service-account key only); %s", sa.Type, fix)
	}
	if sa.ClientEmail == "" || sa.PrivateKey == "" {
		return sa, fmt.Errorf("credentials: the service-account key has no client_email or private_key; %s", fix)
	}
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	if block == nil {
		return sa, fmt.Errorf("credentials: the private_key of service account %s is not PEM; %s", sa.ClientEmail, fix)
	}
	var err error
	if k, perr := x509.ParsePKCS8PrivateKey(block.Bytes); perr == nil {
		var ok bool
		if sa.key, ok = k.(*rsa.PrivateKey); !ok {
			err = errors.New("it is not an RSA key")
		}
	} else if sa.key, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
		err = perr
	}
	if err != nil {
		return sa, fmt.Errorf("credentials: the private_key of service account %s: %v; %s", sa.ClientEmail, err, fix)
	}
	if sa.TokenURI == "" {
		sa.TokenURI = googleTokenURL
	}
	return sa, nil
}

// tokenAnswer is an OAuth2 token endpoint's answer.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
	// Error and ErrorDescription are set on a refusal (RFC 6749 5.2).
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// jwtToken exchanges a JWT signed with sa's key for an access token
// (RFC 7523, Google's service-account flow).
func (g *GCS) jwtToken(ctx context.Context, sa serviceAccountKey) (string, time.Duration, error) {
	now := g.cfg.Clock.Now()
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": sa.PrivateKeyID})
	claims, _ := json.Marshal(map[string]any{"iss": sa.ClientEmail, "scope": gcsScope, "aud": sa.TokenURI,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	unsigned := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	digest := sha256.Sum256([]byte(unsigned))
	sig, err := rsa.SignPKCS1v15(nil, sa.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", 0, fmt.Errorf("credentials: sign the token request of service account %s: %w", sa.ClientEmail, err)
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {unsigned + "." + enc.EncodeToString(sig)}}.Encode()
	what := fmt.Sprintf("get an access token for service account %s from %s", sa.ClientEmail, sa.TokenURI)
	return g.fetchToken(ctx, g.retry, what, "check the key in the secret named by serviceAccountKeySecret (it may have been deleted or disabled) and this machine's clock", func() (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, sa.TokenURI, strings.NewReader(form))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return req, nil
	})
}

// metadataToken gets the workload-identity token of the pod's service
// account from the GCE metadata server at host.
func (g *GCS) metadataToken(ctx context.Context, host string) (string, time.Duration, error) {
	u := "http://" + host + "/computeMetadata/v1/instance/service-accounts/default/token?" + url.Values{"scopes": {gcsScope}}.Encode()
	what := fmt.Sprintf("no serviceAccountKeySecret is set, so workload identity is used: get a token from the GCE metadata server %s", host)
	return g.fetchToken(ctx, g.metadata, what, "set serviceAccountKeySecret on the artifact or on archiveLocation.gcs, or run the pod on GKE with workload identity (its Kubernetes service account bound to a Google service account)", func() (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Metadata-Flavor", "Google")
		return req, nil
	})
}

// fetchToken sends a token request as p says and reads the token; what
// says what it was for and check what to do when it is refused or
// unanswered.
func (g *GCS) fetchToken(ctx context.Context, p retryPolicy, what, check string, newReq func() (*http.Request, error)) (string, time.Duration, error) {
	resp, tries, err := p.send(ctx, newReq, nil)
	if err != nil {
		if tries == 0 || ctx.Err() != nil {
			return "", 0, fmt.Errorf("credentials: %s: %w", what, err)
		}
		return "", 0, fmt.Errorf("credentials: %s: no answer (%d tries); %s: %w", what, tries, check, err)
	}
	defer resp.Body.Close()
	var a tokenAnswer
	derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&a)
	if resp.StatusCode != http.StatusOK {
		detail := resp.Status
		if a.Error != "" {
			detail += ": " + strings.TrimSpace(a.Error+" "+a.ErrorDescription)
		}
		return "", 0, fmt.Errorf("credentials: %s: refused (%s); %s", what, detail, check)
	}
	if derr != nil || a.AccessToken == "" {
		return "", 0, fmt.Errorf("credentials: %s: the answer holds no access_token (%v); %s", what, derr, check)
	}
	life := time.Duration(a.ExpiresIn) * time.Second
	if life <= 0 {
		life = time.Hour
	}
	return a.AccessToken, life, nil
}
