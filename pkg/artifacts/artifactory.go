package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// SecretReader reads the value of a secret key an artifact names
// (SecretFiles implements it); field is the artifact's field that names
// it, for messages.
type SecretReader interface {
	// Secret returns the value of sel's key, as it is.
	Secret(field string, sel *corev1.SecretKeySelector) (string, error)
}

// ArtifactoryConfig is what the Artifactory driver needs besides the
// artifacts themselves.
type ArtifactoryConfig struct {
	// Default is the template's archiveLocation.artifactory, which fills an
	// artifact location without a URL or usernameSecret as Argo v3.3.8's
	// Relocate does: the default's URL with the artifact's URL path, and the
	// default's secrets. Nil means none.
	Default *wf.ArtifactoryArtifact
	// Secrets reads usernameSecret and passwordSecret.
	Secrets SecretReader
	// Client sends the requests; nil means NewHTTPClient(HTTPTimeouts{}).
	Client *http.Client
	// Progress times transfers and says how often long ones log.
	Progress ProgressConfig
	// Tries bounds the attempts of one request when the server cannot be
	// reached or answers 5xx; zero means 3.
	Tries int
	// Backoff is the wait before the second attempt, doubling after; zero
	// means 1 s.
	Backoff time.Duration
	// RepositoryOnly allows only URLs under Default's URL (the
	// repository's repoURL): same scheme and host, path below its path.
	RepositoryOnly bool
}

// Artifactory is the driver for files in a JFrog Artifactory repository,
// or any HTTP server that takes PUT (WebDAV): as Argo v3.3.8's driver, a
// load GETs the artifact's URL and a save PUTs the file there, both with
// basic authentication from usernameSecret and passwordSecret. A save
// sends the file's SHA-256 as X-Checksum-Sha256, which Artifactory
// verifies; a load checks the download against the X-Checksum-Sha256 the
// server answers with, when it does.
type Artifactory struct {
	cfg ArtifactoryConfig
	log *logrus.Entry
}

// NewArtifactory returns an Artifactory driver.
func NewArtifactory(cfg ArtifactoryConfig, log *logrus.Entry) *Artifactory {
	if cfg.Client == nil {
		cfg.Client = NewHTTPClient(HTTPTimeouts{})
	}
	if cfg.Tries <= 0 {
		cfg.Tries = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	return &Artifactory{cfg: cfg, log: log}
}

// artifactoryChecksumHeader carries a file's SHA-256 to and from Artifactory.
const artifactoryChecksumHeader = "X-Checksum-Sha256"

// location is the artifact's full location, relocated onto the default
// as Argo's Relocate does when it has no URL or no usernameSecret.
func (a *Artifactory) location(art wf.Artifact) (wf.ArtifactoryArtifact, *url.URL, error) {
	if art.Artifactory == nil {
		return wf.ArtifactoryArtifact{}, nil, fmt.Errorf("artifactory: artifact %q has no artifactory location", art.Name)
	}
	loc := *art.Artifactory
	if (loc.URL == "" || loc.UsernameSecret == nil) && a.cfg.Default != nil {
		own, err := url.Parse(loc.URL)
		if err != nil {
			return loc, nil, fmt.Errorf("artifactory: artifact %q: url %q: %w", art.Name, loc.URL, err)
		}
		def := *a.cfg.Default
		u, err := url.Parse(def.URL)
		if err != nil {
			return loc, nil, fmt.Errorf("artifactory: artifact %q: the archiveLocation's url %q: %w", art.Name, def.URL, err)
		}
		u.Path, u.RawPath = own.Path, ""
		def.URL = u.String()
		loc = def
	}
	u, err := url.Parse(loc.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return loc, nil, fmt.Errorf("artifactory: artifact %q: url %q is not an absolute http(s) URL; set artifactory.url on the artifact, or artifactRepository.artifactory.repoURL for outputs", art.Name, loc.URL)
	}
	if a.cfg.RepositoryOnly {
		if err := a.underRepository(art.Name, u); err != nil {
			return loc, nil, err
		}
	}
	return loc, u, nil
}

// underRepository refuses u unless it is under the default's URL, the
// repository's repoURL: same scheme and host, its path below the
// repoURL's path (compared cleaned, so ".." cannot climb out).
func (a *Artifactory) underRepository(name string, u *url.URL) error {
	repo := "none"
	if def := a.cfg.Default; def != nil {
		repo = def.URL
		r, err := url.Parse(def.URL)
		if err == nil && r.Scheme == u.Scheme && r.Host == u.Host {
			base := strings.TrimSuffix(path.Clean("/"+r.Path), "/") + "/"
			if strings.HasPrefix(path.Clean("/"+u.Path), base) {
				return nil
			}
		}
	}
	return fmt.Errorf("artifactory: artifact %q: %s is not under the artifact repository's URL (artifactRepository.artifactory.repoURL: %s): only URLs under it are allowed, whose credentials this pod holds; leave the artifact's url out, or give one under the repoURL", name, redacted(u), repo)
}

// auth sets the basic authentication loc's secrets name, if any (Argo's
// driver sends the values as they are, white space included).
func (a *Artifactory) auth(loc wf.ArtifactoryArtifact, req *http.Request) error {
	if loc.UsernameSecret == nil {
		return nil
	}
	if a.cfg.Secrets == nil {
		return fmt.Errorf("artifactory: %s: no secrets are available to this pod's protocol for usernameSecret", loc.URL)
	}
	user, uerr := a.cfg.Secrets.Secret("artifactory.usernameSecret", loc.UsernameSecret)
	pass, perr := a.cfg.Secrets.Secret("artifactory.passwordSecret", loc.PasswordSecret)
	if err := errors.Join(uerr, perr); err != nil {
		return fmt.Errorf("artifactory: credentials for %s: %w", loc.URL, err)
	}
	req.SetBasicAuth(user, pass)
	return nil
}

// do sends the request newReq makes, again on a transport error or a 5xx
// (or 429) answer, up to Tries times with a doubling backoff; the last
// answer is returned with its body open.
func (a *Artifactory) do(ctx context.Context, op, where string, newReq func() (*http.Request, error)) (*http.Response, error) {
	p := retryPolicy{client: a.cfg.Client, tries: a.cfg.Tries, backoff: a.cfg.Backoff}
	resp, tries, err := p.send(ctx, newReq, func(try int, wait time.Duration) {
		a.log.WithFields(logrus.Fields{"url": where, "try": try}).Warnf("artifactory: %s failed; retrying in %s", op, wait)
	})
	switch {
	case err == nil:
		return resp, nil
	case tries == 0:
		return nil, err // building the request failed: it says why
	case ctx.Err() != nil:
		return nil, fmt.Errorf("artifactory: %s %s: %w", op, where, err)
	}
	return nil, fmt.Errorf("artifactory: %s %s: the server did not answer (%d tries); is it up and reachable from the pod (the url's host and port, DNS, network policy)? %w", op, where, tries, err)
}

// status turns an answer outside 2xx into an error that says what to check.
func status(op, where string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyBytes))
	msg := fmt.Sprintf("artifactory: %s %s: %s", op, where, resp.Status)
	// An HTML error page says no more than the status; Artifactory's own
	// errors are JSON.
	if b := bytes.TrimSpace(body); len(b) > 0 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		msg += ": " + strings.Join(strings.Fields(string(b)), " ")
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%s; credentials refused: check the secrets named by usernameSecret and passwordSecret (of the artifact's artifactory or the archiveLocation's), and the user's permissions on that path", msg)
	case http.StatusNotFound:
		return fmt.Errorf("%s; check the url, and that the step that should have stored it succeeded: %w", msg, ErrNotFound)
	case http.StatusMethodNotAllowed:
		return fmt.Errorf("%s; the server does not take %s at that url: is it an Artifactory repository (or a WebDAV server that allows it)?", msg, op)
	}
	return errors.New(msg)
}

// Load GETs the artifact's URL into the local file at localPath. A 404 is
// an error wrapping ErrNotFound; 401 and 403 say to check the secrets.
func (a *Artifactory) Load(ctx context.Context, art wf.Artifact, localPath string) error {
	loc, u, err := a.location(art)
	if err != nil {
		return err
	}
	where := redacted(u)
	resp, err := a.do(ctx, "GET", where, func() (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("artifactory: artifact %q: %w", art.Name, err)
		}
		return req, a.auth(loc, req)
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return status("GET", where, resp)
	}
	f, err := os.Create(localPath)
	if err != nil {
		return fmt.Errorf("artifactory: GET %s: %w", where, err)
	}
	h := sha256.New()
	prog := a.cfg.Progress.Start(a.log.WithField("url", where), "download", max(resp.ContentLength, 0))
	_, err = io.Copy(io.MultiWriter(f, h, prog), resp.Body)
	prog.Done()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("artifactory: GET %s: read the body into %s: %w", where, localPath, err)
	}
	if want := resp.Header.Get(artifactoryChecksumHeader); want != "" && want != hex.EncodeToString(h.Sum(nil)) {
		return fmt.Errorf("artifactory: GET %s: content does not match the server's SHA-256 %s", where, want)
	}
	return nil
}

// Save PUTs the file localPath at the artifact's URL. A directory is
// refused: a URL holds one file (Argo's driver fails on one too).
func (a *Artifactory) Save(ctx context.Context, localPath string, art wf.Artifact) (Object, error) {
	loc, u, err := a.location(art)
	if err != nil {
		return Object{}, err
	}
	where := redacted(u)
	st, err := os.Stat(localPath)
	if err != nil {
		return Object{}, fmt.Errorf("artifactory: PUT %s: %w", where, err)
	}
	if st.IsDir() {
		return Object{}, fmt.Errorf("artifactory: artifact %q: %w: it is a directory, and an Artifactory URL holds one file; archive it (drop `archive: none`)", art.Name, ErrNotSupported)
	}
	f, err := os.Open(localPath)
	if err != nil {
		return Object{}, fmt.Errorf("artifactory: PUT %s: %w", where, err)
	}
	defer f.Close()
	sum, err := fileSHA256(f)
	if err != nil {
		return Object{}, fmt.Errorf("artifactory: hash %s: %w", localPath, err)
	}
	prog := a.cfg.Progress.Start(a.log.WithField("url", where), "upload", st.Size())
	defer prog.Done()
	resp, err := a.do(ctx, "PUT", where, func() (*http.Request, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("artifactory: PUT %s: %w", where, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), io.TeeReader(f, prog))
		if err != nil {
			return nil, fmt.Errorf("artifactory: artifact %q: %w", art.Name, err)
		}
		req.ContentLength = st.Size()
		req.Header.Set("Content-Type", "application/octet-stream")
		req.Header.Set(artifactoryChecksumHeader, sum)
		return req, a.auth(loc, req)
	})
	if err != nil {
		return Object{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return Object{}, status("PUT", where, resp)
	}
	return Object{Key: u.Path, Size: st.Size(), SHA256: sum, Files: 1}, nil
}

// redacted is u for messages, without a password in it.
func redacted(u *url.URL) string { return u.Redacted() }
