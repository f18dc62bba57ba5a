package artifacts

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// GCSEndpoints say where the gcs store's servers are, from the variables
// Google's own clients read; the zero value is Google's.
type GCSEndpoints struct {
	// EmulatorHost is STORAGE_EMULATOR_HOST: host[:port] (plain HTTP) or a
	// URL of a GCS emulator, talked to without credentials, as Google's
	// storage client does. Empty means Google Cloud Storage itself.
	EmulatorHost string
	// MetadataHost is GCE_METADATA_HOST: host[:port] of the metadata server
	// that gives the workload-identity token when an artifact names no
	// key. Empty means 169.254.169.254, as Google's metadata client.
	MetadataHost string
}

// GCSConfig is what the GCS driver needs besides the artifacts themselves.
type GCSConfig struct {
	// Default is the template's archiveLocation.gcs, which replaces an
	// artifact location without a bucket, the artifact's key kept, as Argo
	// v3.3.8's Relocate does. Nil means none.
	Default *wf.GCSArtifact
	// Secrets reads the service-account key serviceAccountKeySecret names.
	Secrets SecretReader
	// RepositoryOnly allows only Default's bucket, with Default's
	// credentials: our pod builder passes only the repository's key.
	RepositoryOnly bool
	// Endpoints are the emulator and the metadata server, if any.
	Endpoints GCSEndpoints
	// APIRoot is the GCS JSON API's root URL; empty means
	// https://storage.googleapis.com, or the emulator's. Tests set it.
	APIRoot string
	// Client sends the requests; nil means NewHTTPClient(HTTPTimeouts{}).
	Client *http.Client
	// Progress times transfers and says how often long ones log.
	Progress ProgressConfig
	// Tries bounds the attempts of one request when the server cannot be
	// reached or answers 429 or 5xx; zero means 5.
	Tries int
	// Backoff is the wait before the second attempt, doubling after (Argo's
	// GCS driver waits 2 s, doubling, 5 times); zero means 1 s.
	Backoff time.Duration
	// Clock says when an access token expires; nil means the real clock.
	Clock clock.PassiveClock
}

// GCS is the driver for objects in Google Cloud Storage buckets, through
// GCS's JSON API over net/http (Google's client library would pull gRPC
// into the binary). As Argo v3.3.8's driver: credentials are the
// service-account JSON key in the secret serviceAccountKeySecret names, or,
// with none, the workload-identity token of the GCE metadata server; with
// STORAGE_EMULATOR_HOST set, requests go to the emulator without
// credentials. A file is one object at the key; a directory is each of its
// files at KEY/RELATIVE/PATH, and a key with no object of its own but
// objects under KEY/ loads as that directory. Save records each object's
// SHA-256 in its metadata and sends its CRC32C, which the server verifies;
// a download is checked against the SHA-256, or else the CRC32C the server
// holds (objects Argo's driver uploaded have one).
type GCS struct {
	cfg   GCSConfig
	log   *logrus.Entry
	retry retryPolicy
	// metadata is how the metadata server is asked: briefly, since off
	// Google Cloud its address may not answer at all.
	metadata retryPolicy

	mu     sync.Mutex
	tokens map[string]*gcsToken // by service-account key; "" is the metadata server's
}

// gcsScope is the OAuth2 scope Argo's driver asks for (storage.ScopeReadWrite).
const gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"

// NewGCS returns a GCS driver; it does not contact the server.
func NewGCS(cfg GCSConfig, log *logrus.Entry) *GCS {
	if cfg.Client == nil {
		cfg.Client = NewHTTPClient(HTTPTimeouts{})
	}
	if cfg.Tries <= 0 {
		cfg.Tries = 5
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	brief := &http.Client{Transport: cfg.Client.Transport, Timeout: metadataTimeout}
	return &GCS{cfg: cfg, log: log, tokens: map[string]*gcsToken{},
		retry:    retryPolicy{client: cfg.Client, tries: cfg.Tries, backoff: cfg.Backoff},
		metadata: retryPolicy{client: brief, tries: min(cfg.Tries, 3), backoff: cfg.Backoff}}
}

// apiRoot is the root URL requests go to.
func (g *GCS) apiRoot() (string, error) {
	if g.cfg.APIRoot != "" {
		return strings.TrimSuffix(g.cfg.APIRoot, "/"), nil
	}
	host := g.cfg.Endpoints.EmulatorHost
	if host == "" {
		return "https://storage.googleapis.com", nil
	}
	if !strings.Contains(host, "://") {
		return "http://" + strings.TrimSuffix(host, "/"), nil
	}
	u, err := url.Parse(host)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("gcs: %s=%q is neither host[:port] nor an http(s) URL of the emulator; fix it or unset it to use Google Cloud Storage", wf.EnvStorageEmulatorHost, host)
	}
	return u.Scheme + "://" + u.Host, nil
}

// location is the artifact's full GCS location, relocated onto the
// default as Argo's Relocate does when it has no bucket.
func (g *GCS) location(art wf.Artifact) (wf.GCSArtifact, error) {
	if art.GCS == nil {
		return wf.GCSArtifact{}, fmt.Errorf("gcs: artifact %q has no gcs location", art.Name)
	}
	loc := *art.GCS
	if def := g.cfg.Default; def != nil && (loc.Bucket == "" || g.cfg.RepositoryOnly && loc.Bucket == def.Bucket) {
		key := loc.Key
		loc = *def
		loc.Key = key
	}
	if g.cfg.RepositoryOnly && (g.cfg.Default == nil || loc.Bucket != g.cfg.Default.Bucket) {
		return loc, fmt.Errorf("gcs: artifact %q: %s is not in the artifact repository's bucket: only the repository's bucket is allowed, whose credentials this pod holds", art.Name, gsURL(loc.Bucket, loc.Key))
	}
	if loc.Bucket == "" || loc.Key == "" {
		return loc, fmt.Errorf("gcs: artifact %q: bucket %q and key %q must both be set, on the artifact or by the artifact repository (archiveLocation.gcs)", art.Name, loc.Bucket, loc.Key)
	}
	return loc, nil
}

// gsURL names an object in messages.
func gsURL(bucket, key string) string { return "gs://" + bucket + "/" + key }

// gcsObject is the part of GCS's object resource the driver reads.
type gcsObject struct {
	Name       string            `json:"name"`
	Size       jsonInt           `json:"size"`
	Generation jsonInt           `json:"generation"`
	CRC32C     string            `json:"crc32c"`
	Metadata   map[string]string `json:"metadata"`
}

// jsonInt is an int64 the JSON API writes as a string ("123"); a number
// is taken too.
type jsonInt int64

// UnmarshalJSON reads "123" or 123.
func (n *jsonInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	*n = jsonInt(v)
	return err
}

// Load downloads the artifact's object into the local file at localPath,
// creating or truncating it. When there is no object at the key but there
// are objects under KEY/ (a directory, as Save and Argo's GCS driver store
// one), it downloads them into a new directory at localPath instead, each
// at its key's path below KEY/. Neither an object nor any under the key is
// an error wrapping ErrNotFound.
func (g *GCS) Load(ctx context.Context, art wf.Artifact, localPath string) error {
	loc, err := g.location(art)
	if err != nil {
		return err
	}
	obj, err := g.stat(ctx, loc)
	if errors.Is(err, ErrNotFound) {
		objs, lerr := g.list(ctx, "list the directory", loc, dirPrefix(loc.Key))
		if lerr != nil {
			return lerr
		}
		objs = withoutDirs(objs)
		if len(objs) == 0 {
			return fmt.Errorf("%w (and no object under %s/: not a directory either); check the key, and that the step that should have stored it succeeded", err, strings.TrimSuffix(loc.Key, "/"))
		}
		return g.loadDir(ctx, loc, objs, localPath)
	}
	if err != nil {
		return err
	}
	prog := g.cfg.Progress.Start(g.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key}), "download", int64(obj.Size))
	defer prog.Done()
	return g.get(ctx, loc, obj, localPath, prog)
}

// loadDir downloads objs, the objects under loc.Key/, into a new directory
// at dir, refusing a key whose path would land outside it.
func (g *GCS) loadDir(ctx context.Context, loc wf.GCSArtifact, objs []gcsObject, dir string) error {
	prefix := dirPrefix(loc.Key)
	where := "gcs: download directory " + gsURL(loc.Bucket, prefix)
	var total int64
	rels := make([]string, len(objs))
	for i, o := range objs {
		total += int64(o.Size)
		var err error
		if rels[i], err = treePath(where, prefix, o.Name); err != nil {
			return err
		}
	}
	log := g.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key})
	log.WithField("objects", len(objs)).Info("no object at the key: downloading the directory under it")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	prog := g.cfg.Progress.Start(log, "download", total)
	defer prog.Done()
	for i, o := range objs {
		dest := filepath.Join(dir, rels[i])
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return fmt.Errorf("gcs: download %s: %w", gsURL(loc.Bucket, o.Name), err)
		}
		one := loc
		one.Key = o.Name
		if err := g.get(ctx, one, o, dest, prog); err != nil {
			return err
		}
	}
	return nil
}

// objectURL is the JSON API's URL of loc's object, with query (alt=media
// for its content).
func objectURL(root string, loc wf.GCSArtifact, query url.Values) string {
	u := root + "/storage/v1/b/" + url.PathEscape(loc.Bucket) + "/o/" + url.PathEscape(loc.Key)
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// stat reads the object resource at loc; no object is an error wrapping
// ErrNotFound.
func (g *GCS) stat(ctx context.Context, loc wf.GCSArtifact) (gcsObject, error) {
	resp, err := g.call(ctx, "download", loc, func(root string) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, objectURL(root, loc, nil), nil)
	})
	if err != nil {
		return gcsObject{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return gcsObject{}, g.status("download", loc, resp, gcsMissingObject)
	}
	var obj gcsObject
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		return gcsObject{}, fmt.Errorf("gcs: download %s: read the object's metadata: %w", gsURL(loc.Bucket, loc.Key), err)
	}
	return obj, nil
}

// get downloads the object obj (at loc) into a new file at localPath,
// counting its bytes in prog, and checks its size, and its SHA-256 or
// else its CRC32C.
func (g *GCS) get(ctx context.Context, loc wf.GCSArtifact, obj gcsObject, localPath string, prog *Progress) error {
	where := gsURL(loc.Bucket, loc.Key)
	q := url.Values{"alt": {"media"}}
	if obj.Generation != 0 {
		q.Set("generation", strconv.FormatInt(int64(obj.Generation), 10)) // the version just listed or read
	}
	resp, err := g.call(ctx, "download", loc, func(root string) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, objectURL(root, loc, q), nil)
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return g.status("download", loc, resp, gcsMissingObject)
	}
	f, err := os.Create(localPath)
	if err != nil {
		return fmt.Errorf("gcs: download %s: %w", where, err)
	}
	sh, ch := sha256.New(), crc32.New(crc32.MakeTable(crc32.Castagnoli))
	n, err := io.Copy(io.MultiWriter(f, sh, ch, prog), resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("gcs: download %s to %s: %w", where, localPath, err)
	}
	if n != int64(obj.Size) {
		return fmt.Errorf("gcs: download %s: got %d bytes, the object has %d; try again, and check the network between the pod and the server", where, n, obj.Size)
	}
	if want := obj.Metadata[sha256MetaKey]; want != "" {
		if got := hex.EncodeToString(sh.Sum(nil)); got != want {
			return fmt.Errorf("gcs: download %s: content does not match its recorded SHA-256 %s (got %s)", where, want, got)
		}
	} else if want := obj.CRC32C; want != "" {
		if got := crc32cString(ch.Sum32()); got != want {
			return fmt.Errorf("gcs: download %s: content does not match the server's CRC32C %s (got %s)", where, want, got)
		}
	}
	return nil
}

// crc32cString is a CRC32C as the JSON API writes it: base64 of its four
// big-endian bytes.
func crc32cString(sum uint32) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum))
}

// List returns the names of every object in the artifact's bucket whose
// name starts with its key, as Argo v3.3.8's GCS driver lists them for a
// data template's source.artifactPaths (ListObjects): the key taken as a
// plain prefix (no "/" added; an empty key lists the whole bucket), no
// delimiter, so recursively, in the server's (lexical) order, every name
// kept, the empty "directory" objects some consoles create too. No object
// is an empty (nil) list, not an error.
func (g *GCS) List(ctx context.Context, art wf.Artifact) ([]string, error) {
	if art.GCS == nil {
		return nil, fmt.Errorf("gcs: list artifact %q: it has no gcs location", art.Name)
	}
	prefix := art.GCS.Key
	probe := art
	one := *art.GCS
	if one.Key == "" {
		one.Key = "/" // location wants a key; a listing may have none
	}
	probe.GCS = &one
	loc, err := g.location(probe)
	if err != nil {
		return nil, err
	}
	objs, err := g.list(ctx, "list", loc, prefix)
	if err != nil {
		return nil, fmt.Errorf("artifact %q: %w", art.Name, err)
	}
	if len(objs) == 0 {
		return nil, nil
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	return names, nil
}

// list lists every object in loc's bucket whose name starts with prefix,
// page by page (nextPageToken), in the server's (lexical) order; op names
// the operation in errors.
func (g *GCS) list(ctx context.Context, op string, loc wf.GCSArtifact, prefix string) ([]gcsObject, error) {
	one := loc
	one.Key = prefix
	var objs []gcsObject
	token := ""
	for {
		q := url.Values{"prefix": {prefix}}
		if token != "" {
			q.Set("pageToken", token)
		}
		resp, err := g.call(ctx, op, one, func(root string) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, root+"/storage/v1/b/"+url.PathEscape(loc.Bucket)+"/o?"+q.Encode(), nil)
		})
		if err != nil {
			return nil, err
		}
		var page struct {
			Items         []gcsObject `json:"items"`
			NextPageToken string      `json:"nextPageToken"`
		}
		if resp.StatusCode != http.StatusOK {
			err = g.status(op, one, resp, gcsMissingBucket)
		} else if derr := json.NewDecoder(resp.Body).Decode(&page); derr != nil {
			err = fmt.Errorf("gcs: %s %s: read the listing: %w", op, gsURL(loc.Bucket, prefix), derr)
		}
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		objs = append(objs, page.Items...)
		if page.NextPageToken == "" {
			return objs, nil
		}
		if page.NextPageToken == token {
			return nil, fmt.Errorf("gcs: %s %s: the server gave the same nextPageToken %q twice; it is not paging, check the server (or emulator)", op, gsURL(loc.Bucket, prefix), token)
		}
		token = page.NextPageToken
	}
}

// withoutDirs is objs without the empty "directory" objects some consoles
// create (names ending in "/"), which a downloaded tree does not hold.
func withoutDirs(objs []gcsObject) []gcsObject {
	var files []gcsObject
	for _, o := range objs {
		if !strings.HasSuffix(o.Name, "/") {
			files = append(files, o)
		}
	}
	return files
}

// Save uploads localPath to the artifact's gcs location: a file as the
// object at the key (cleaned, as Argo's driver does); a directory as Argo
// v3.3.8's GCS driver stores one, each file under it as its own object at
// KEY/RELATIVE/PATH, a symlink to a file in the directory as that file's
// content, directories themselves not stored (an empty directory stores
// nothing). Long uploads log their progress. Each stored object is checked
// to have the size and SHA-256 of what was sent.
func (g *GCS) Save(ctx context.Context, localPath string, art wf.Artifact) (Object, error) {
	loc, err := g.location(art)
	if err != nil {
		return Object{}, err
	}
	loc.Key = path.Clean(loc.Key)
	st, err := os.Stat(localPath)
	if err != nil {
		return Object{}, fmt.Errorf("gcs: upload %s: %w", localPath, err)
	}
	log := g.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key})
	if !st.IsDir() {
		prog := g.cfg.Progress.Start(log, "upload", st.Size())
		defer prog.Done()
		return g.put(ctx, loc, localPath, prog)
	}
	files, total, skipped, err := walkTree(localPath, loc.Key, followLinks)
	if err != nil {
		return Object{}, fmt.Errorf("gcs: upload directory %s: %w", localPath, err)
	}
	if len(skipped) > 0 {
		log.Warnf("gcs: not stored from %s: %s (symlinks to a directory or out of the directory, and special files)", localPath, strings.Join(skipped, ", "))
	}
	if len(files) == 0 {
		log.Warnf("gcs: %s is an empty directory: nothing is stored under %s/ (as Argo's argoexec), so loading it as an input will find no object", localPath, gsURL(loc.Bucket, loc.Key))
	}
	prog := g.cfg.Progress.Start(log, "upload", total)
	defer prog.Done()
	for _, f := range files {
		one := loc
		one.Key = f.key
		if _, err := g.put(ctx, one, f.path, prog); err != nil {
			return Object{}, err
		}
	}
	return Object{Key: loc.Key, Size: total, Files: len(files)}, nil
}

// put uploads the file localPath as the object loc.Key in one multipart
// request (metadata and media), counting its bytes in prog, and checks
// what the server stored.
func (g *GCS) put(ctx context.Context, loc wf.GCSArtifact, localPath string, prog *Progress) (Object, error) {
	where := gsURL(loc.Bucket, loc.Key)
	f, err := os.Open(localPath)
	if err != nil {
		return Object{}, fmt.Errorf("gcs: upload %s: %w", localPath, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Object{}, fmt.Errorf("gcs: upload %s: %w", localPath, err)
	}
	sh, ch := sha256.New(), crc32.New(crc32.MakeTable(crc32.Castagnoli))
	if _, err := io.Copy(io.MultiWriter(sh, ch), f); err != nil {
		return Object{}, fmt.Errorf("gcs: hash %s: %w", localPath, err)
	}
	sum := hex.EncodeToString(sh.Sum(nil))
	meta, err := json.Marshal(map[string]any{
		"name": loc.Key, "contentType": "application/octet-stream",
		"crc32c": crc32cString(ch.Sum32()), "metadata": map[string]string{sha256MetaKey: sum},
	})
	if err != nil {
		return Object{}, fmt.Errorf("gcs: upload %s: %w", where, err)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	boundary := hex.EncodeToString(b[:])
	head := []byte("--" + boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" + string(meta) +
		"\r\n--" + boundary + "\r\nContent-Type: application/octet-stream\r\n\r\n")
	tail := []byte("\r\n--" + boundary + "--\r\n")
	resp, err := g.call(ctx, "upload", loc, func(root string) (*http.Request, error) {
		body := io.MultiReader(bytes.NewReader(head), io.TeeReader(io.NewSectionReader(f, 0, st.Size()), prog), bytes.NewReader(tail))
		u := root + "/upload/storage/v1/b/" + url.PathEscape(loc.Bucket) + "/o?uploadType=multipart"
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
		if err != nil {
			return nil, err
		}
		req.ContentLength = int64(len(head)) + st.Size() + int64(len(tail))
		req.Header.Set("Content-Type", "multipart/related; boundary="+boundary)
		return req, nil
	})
	if err != nil {
		return Object{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Object{}, g.status("upload", loc, resp, gcsMissingBucket)
	}
	var obj gcsObject
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		return Object{}, fmt.Errorf("gcs: check uploaded object %s: read the server's answer: %w", where, err)
	}
	if int64(obj.Size) != st.Size() {
		return Object{}, fmt.Errorf("gcs: check uploaded object %s: stored %d bytes, sent %d", where, obj.Size, st.Size())
	}
	if got := obj.Metadata[sha256MetaKey]; got != sum {
		return Object{}, fmt.Errorf("gcs: check uploaded object %s: stored SHA-256 %q, sent %q", where, got, sum)
	}
	return Object{Key: loc.Key, Size: st.Size(), SHA256: sum, Files: 1}, nil
}

// call sends the request newReq makes against the API root, with loc's
// access token, retrying as the policy says; the answer's status is the
// caller's to check. op names the operation in messages.
func (g *GCS) call(ctx context.Context, op string, loc wf.GCSArtifact, newReq func(root string) (*http.Request, error)) (*http.Response, error) {
	where := gsURL(loc.Bucket, loc.Key)
	root, err := g.apiRoot()
	if err != nil {
		return nil, err
	}
	token, err := g.token(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("gcs: %s %s: %w", op, where, err)
	}
	resp, tries, err := g.retry.send(ctx, func() (*http.Request, error) {
		req, err := newReq(root)
		if err != nil {
			return nil, fmt.Errorf("gcs: %s %s: %w", op, where, err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req, nil
	}, func(try int, wait time.Duration) {
		g.log.WithFields(logrus.Fields{"bucket": loc.Bucket, "key": loc.Key, "try": try}).Warnf("gcs: %s failed; retrying in %s", op, wait)
	})
	switch {
	case err == nil:
		return resp, nil
	case tries == 0:
		return nil, err
	case ctx.Err() != nil:
		return nil, fmt.Errorf("gcs: %s %s: %w", op, where, err)
	}
	hint := "is it up and reachable from the pod (DNS, network policy, a proxy)?"
	if g.cfg.Endpoints.EmulatorHost != "" {
		hint = fmt.Sprintf("is the emulator %s=%s up and reachable from the pod?", wf.EnvStorageEmulatorHost, g.cfg.Endpoints.EmulatorHost)
	}
	return nil, fmt.Errorf("gcs: %s %s at %s: the server did not answer (%d tries); %s %w", op, where, root, tries, hint, err)
}

// gcsMissing says what a 404 means for a request: its object, or its
// bucket, is not there.
type gcsMissing int

const (
	gcsMissingObject gcsMissing = iota
	gcsMissingBucket
)

// status turns an answer that is not 200 into an error that says what to
// check.
func (g *GCS) status(op string, loc wf.GCSArtifact, resp *http.Response, missing gcsMissing) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyBytes))
	msg := fmt.Sprintf("gcs: %s %s: %s", op, gsURL(loc.Bucket, loc.Key), resp.Status)
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg += ": " + e.Error.Message
	} else if b := bytes.TrimSpace(body); len(b) > 0 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		msg += ": " + strings.Join(strings.Fields(string(b)), " ")
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
		who := "the service account whose JSON key is in the secret named by serviceAccountKeySecret (of the artifact's gcs or archiveLocation.gcs)"
		if loc.ServiceAccountKeySecret == nil || loc.ServiceAccountKeySecret.Name == "" {
			who = "the Google service account the pod's workload identity maps to (no serviceAccountKeySecret is set)"
		}
		return fmt.Errorf("%s; credentials refused: check %s, and that it may read and write objects in bucket %q (roles/storage.objectAdmin)", msg, who, loc.Bucket)
	case resp.StatusCode == http.StatusNotFound && missing == gcsMissingObject:
		return fmt.Errorf("%s: %w", msg, ErrNotFound)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s; the bucket does not exist: create it or fix the bucket (archiveLocation.gcs.bucket or the artifact's gcs.bucket)", msg)
	}
	return errors.New(msg)
}
