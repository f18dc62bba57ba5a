package artifacts

import (
	"cmp"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// fakeGCS is GCS's JSON API as the driver uses it, in memory: object
// resources and media, listing by prefix (two objects a page, so paging
// is exercised), multipart uploads. token, when set, is the bearer token
// every request must carry; fail answers the next requests with its
// statuses first.
type fakeGCS struct {
	t     *testing.T
	token string

	mu       sync.Mutex
	objects  map[string]fakeObject // by bucket + "/" + name
	buckets  map[string]bool
	fail     []int
	requests int
}

type fakeObject struct {
	data []byte
	meta map[string]string
	crc  string
}

func newFakeGCS(t *testing.T, buckets ...string) (*fakeGCS, *httptest.Server) {
	f := &fakeGCS{t: t, objects: map[string]fakeObject{}, buckets: map[string]bool{}}
	for _, b := range buckets {
		f.buckets[b] = true
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeGCS) put(bucket, name, data string, meta map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[bucket+"/"+name] = fakeObject{data: []byte(data), meta: meta, crc: crc32cString(crc32.Checksum([]byte(data), crc32.MakeTable(crc32.Castagnoli)))}
}

func (f *fakeGCS) resource(bucket, name string, o fakeObject) map[string]any {
	return map[string]any{"name": name, "bucket": bucket, "size": fmt.Sprint(len(o.data)), "generation": "7", "crc32c": o.crc, "metadata": o.meta}
}

func (f *fakeGCS) errorf(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

func (f *fakeGCS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if len(f.fail) > 0 {
		code := f.fail[0]
		f.fail = f.fail[1:]
		f.errorf(w, code, "injected")
		return
	}
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		f.errorf(w, http.StatusUnauthorized, "Invalid Credentials")
		return
	}
	p := r.URL.EscapedPath()
	upload := strings.HasPrefix(p, "/upload/storage/v1/b/")
	rest, ok := strings.CutPrefix(strings.TrimPrefix(p, "/upload"), "/storage/v1/b/")
	if !ok {
		f.errorf(w, http.StatusNotFound, "no such API")
		return
	}
	bucket, obj, _ := strings.Cut(rest, "/o")
	if !f.buckets[bucket] {
		f.errorf(w, http.StatusNotFound, "The specified bucket does not exist.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case upload && r.Method == http.MethodPost:
		f.upload(w, r, bucket)
	case obj == "" && r.Method == http.MethodGet: // list
		prefix, start := r.URL.Query().Get("prefix"), 0
		if tok := r.URL.Query().Get("pageToken"); tok != "" {
			_, _ = fmt.Sscan(tok, &start)
		}
		var names []string
		for k := range f.objects {
			if b, n, _ := strings.Cut(k, "/"); b == bucket && strings.HasPrefix(n, prefix) {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		page := map[string]any{}
		var items []any
		for i := start; i < len(names) && i < start+2; i++ {
			items = append(items, f.resource(bucket, names[i], f.objects[bucket+"/"+names[i]]))
		}
		page["items"] = items
		if start+2 < len(names) {
			page["nextPageToken"] = fmt.Sprint(start + 2)
		}
		_ = json.NewEncoder(w).Encode(page)
	case strings.HasPrefix(obj, "/") && r.Method == http.MethodGet:
		name, err := url.PathUnescape(obj[1:])
		if err != nil {
			f.errorf(w, http.StatusBadRequest, err.Error())
			return
		}
		o, ok := f.objects[bucket+"/"+name]
		if !ok {
			f.errorf(w, http.StatusNotFound, "No such object: "+bucket+"/"+name)
			return
		}
		if r.URL.Query().Get("alt") == "media" {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(o.data)
			return
		}
		_ = json.NewEncoder(w).Encode(f.resource(bucket, name, o))
	default:
		f.errorf(w, http.StatusMethodNotAllowed, r.Method+" "+p)
	}
}

func (f *fakeGCS) upload(w http.ResponseWriter, r *http.Request, bucket string) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/related" || r.URL.Query().Get("uploadType") != "multipart" {
		f.errorf(w, http.StatusBadRequest, fmt.Sprintf("want a multipart upload, got %q %v", mt, err))
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var meta struct {
		Name     string            `json:"name"`
		CRC32C   string            `json:"crc32c"`
		Metadata map[string]string `json:"metadata"`
	}
	part, err := mr.NextPart()
	if err == nil {
		err = json.NewDecoder(part).Decode(&meta)
	}
	var data []byte
	if err == nil {
		if part, err = mr.NextPart(); err == nil {
			data, err = io.ReadAll(part)
		}
	}
	if err != nil {
		f.errorf(w, http.StatusBadRequest, "multipart body: "+err.Error())
		return
	}
	o := fakeObject{data: data, meta: meta.Metadata, crc: crc32cString(crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))}
	if meta.CRC32C != o.crc {
		f.errorf(w, http.StatusBadRequest, "Provided CRC32C \""+meta.CRC32C+"\" doesn't match calculated CRC32C \""+o.crc+"\".")
		return
	}
	f.objects[bucket+"/"+meta.Name] = o
	_ = json.NewEncoder(w).Encode(f.resource(bucket, meta.Name, o))
}

// names lists the stored objects of bucket.
func (f *fakeGCS) names(bucket string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.objects {
		if b, n, _ := strings.Cut(k, "/"); b == bucket {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func testGCS(root string, cfg GCSConfig) *GCS {
	cfg.APIRoot = root
	cfg.Backoff = time.Millisecond
	return NewGCS(cfg, discard())
}

func gcsArt(name, bucket, key string) wf.Artifact {
	return wf.Artifact{Name: name, GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: bucket}, Key: key}}
}

// TestGCSRoundTrip: a file and a directory saved and loaded back, in Argo's
// key layout, with the SHA-256 recorded; a key relocated onto the
// archiveLocation's bucket.
func TestGCSRoundTrip(t *testing.T) {
	fake, srv := newFakeGCS(t, "b", "repo")
	g := testGCS(srv.URL, GCSConfig{Default: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "repo"}}, Endpoints: GCSEndpoints{EmulatorHost: "unused"}})
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	mustWrite(t, file, "hello gcs\n")
	tree := filepath.Join(dir, "tree")
	mustWrite(t, filepath.Join(tree, "a.txt"), "one\n")
	mustWrite(t, filepath.Join(tree, "sub", "b.txt"), "two\n")
	mustWrite(t, filepath.Join(tree, "sub", "deeper", "empty"), "")
	if err := os.Symlink("a.txt", filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(tree, "outside")); err != nil {
		t.Fatal(err)
	}

	obj, err := g.Save(t.Context(), file, gcsArt("f", "b", "wf/f.txt"))
	if err != nil {
		t.Fatalf("Save file: %v", err)
	}
	if sum := sha256.Sum256([]byte("hello gcs\n")); obj.SHA256 != fmt.Sprintf("%x", sum) || obj.Size != 10 || obj.Files != 1 {
		t.Errorf("Save file = %+v, want 10 bytes, 1 file, its SHA-256", obj)
	}
	obj, err = g.Save(t.Context(), tree, gcsArt("t", "b", "wf/tree/"))
	if err != nil {
		t.Fatalf("Save directory: %v", err)
	}
	if obj.Files != 4 || obj.Size != 12 {
		t.Errorf("Save directory = %+v, want 4 files, 12 bytes", obj)
	}
	if got, want := fake.names("b"), []string{"wf/f.txt", "wf/tree/a.txt", "wf/tree/link", "wf/tree/sub/b.txt", "wf/tree/sub/deeper/empty"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored %v, want %v (the link to a.txt as its content, none for the link out of the tree)", got, want)
	}
	if _, err := g.Save(t.Context(), file, wf.Artifact{Name: "r", GCS: &wf.GCSArtifact{Key: "wf/r.txt"}}); err != nil {
		t.Fatalf("Save relocated: %v", err)
	}
	if got := fake.names("repo"); fmt.Sprint(got) != "[wf/r.txt]" {
		t.Errorf("relocated save stored %v in the archiveLocation's bucket, want [wf/r.txt]", got)
	}

	out := t.TempDir()
	if err := g.Load(t.Context(), gcsArt("f", "b", "wf/f.txt"), filepath.Join(out, "f")); err != nil {
		t.Fatalf("Load file: %v", err)
	}
	wantFile(t, filepath.Join(out, "f"), "hello gcs\n")
	if err := g.Load(t.Context(), gcsArt("t", "b", "wf/tree"), filepath.Join(out, "tree")); err != nil {
		t.Fatalf("Load directory: %v", err)
	}
	for p, want := range map[string]string{"a.txt": "one\n", "link": "one\n", "sub/b.txt": "two\n", "sub/deeper/empty": ""} {
		wantFile(t, filepath.Join(out, "tree", p), want)
	}
}

// TestGCSRepositoryOnly: under our pod builder every gcs artifact is in the
// repository's bucket, with its credentials; another bucket is refused.
func TestGCSRepositoryOnly(t *testing.T) {
	sel := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sa"}, Key: "key.json"}
	def := &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "repo", ServiceAccountKeySecret: sel}}
	for _, tt := range []struct {
		name    string
		art     wf.Artifact
		wantErr string
	}{
		{name: "a key alone", art: wf.Artifact{Name: "a", GCS: &wf.GCSArtifact{Key: "k"}}},
		{name: "the repository's bucket, without its secret", art: gcsArt("a", "repo", "k")},
		{name: "another bucket", art: gcsArt("a", "other", "k"), wantErr: `gcs: artifact "a": gs://other/k is not in the artifact repository's bucket`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := NewGCS(GCSConfig{Default: def, RepositoryOnly: true}, discard()).location(tt.art)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("location: %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || loc.Bucket != "repo" || loc.Key != "k" || loc.ServiceAccountKeySecret != sel {
				t.Errorf("location = %+v, %v; want the repository's bucket and secret", loc, err)
			}
		})
	}
}

// TestGCSLoadChecks: a download is checked against the SHA-256 Save
// records, or else against the server's CRC32C (Argo's uploads).
func TestGCSLoadChecks(t *testing.T) {
	fake, srv := newFakeGCS(t, "b")
	g := testGCS(srv.URL, GCSConfig{Endpoints: GCSEndpoints{EmulatorHost: "unused"}})
	fake.put("b", "argo.tgz", "from argo's driver", nil)
	fake.put("b", "bad-sha", "content", map[string]string{sha256MetaKey: strings.Repeat("0", 64)})
	fake.put("b", "bad-crc", "content", nil)
	fake.mu.Lock()
	o := fake.objects["b/bad-crc"]
	o.crc = crc32cString(1)
	fake.objects["b/bad-crc"] = o
	fake.mu.Unlock()
	for _, tt := range []struct{ key, wantErr string }{
		{"argo.tgz", ""},
		{"bad-sha", "content does not match its recorded SHA-256 " + strings.Repeat("0", 64)},
		{"bad-crc", "content does not match the server's CRC32C AAAAAQ=="},
	} {
		t.Run(tt.key, func(t *testing.T) {
			err := g.Load(t.Context(), gcsArt("a", "b", tt.key), filepath.Join(t.TempDir(), "x"))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Load: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestGCSErrors: every failure names the store (gs://bucket/key) and what
// to check; a missing object wraps ErrNotFound, so optional inputs work.
func TestGCSErrors(t *testing.T) {
	fake, srv := newFakeGCS(t, "b")
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	keyJSON, _ := testServiceAccountKey(t, "http://127.0.0.1:1/token")
	secrets := mapSecrets{"gcs.serviceAccountKeySecret": keyJSON}
	withKey := func(a wf.Artifact) wf.Artifact {
		a.GCS.ServiceAccountKeySecret = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sa"}, Key: "key.json"}
		return a
	}
	file := filepath.Join(t.TempDir(), "f")
	mustWrite(t, file, "x")
	emu := func(root string) GCSConfig {
		return GCSConfig{Endpoints: GCSEndpoints{EmulatorHost: strings.TrimPrefix(root, "http://")}}
	}
	tests := []struct {
		name string
		cfg  GCSConfig
		// root: the fake (""), or none ("-": the emulator's or Google's)
		root string
		// serverToken: the token the fake takes, when not the metadata server's
		serverToken string
		art         wf.Artifact
		save        bool
		want        []string
		notFound    bool
	}{
		{name: "missing object", cfg: GCSConfig{Endpoints: GCSEndpoints{MetadataHost: "META"}}, art: gcsArt("in", "b", "nope"),
			want: []string{"gcs: download gs://b/nope: 404", "No such object", "no object under nope/", "check the key"}, notFound: true},
		{name: "missing bucket on load", cfg: GCSConfig{Endpoints: GCSEndpoints{MetadataHost: "META"}}, art: gcsArt("in", "gone", "k"),
			want: []string{"gs://gone/k/", "the bucket does not exist: create it or fix the bucket"}},
		{name: "missing bucket on save", cfg: GCSConfig{Endpoints: GCSEndpoints{MetadataHost: "META"}}, art: gcsArt("out", "gone", "k"), save: true,
			want: []string{"gcs: upload gs://gone/k: 404", "the bucket does not exist"}},
		{name: "credentials refused (workload identity)", cfg: GCSConfig{Endpoints: GCSEndpoints{MetadataHost: "META"}}, serverToken: "other", art: gcsArt("in", "b", "k"),
			want: []string{"gcs: download gs://b/k: 401", "credentials refused: check the Google service account the pod's workload identity maps to", "roles/storage.objectAdmin"}},
		{name: "credentials refused (key)", cfg: GCSConfig{Secrets: secrets, Endpoints: GCSEndpoints{MetadataHost: "META"}}, art: withKey(gcsArt("in", "b", "k")),
			want: []string{"get an access token for service account argoexec@test.iam.gserviceaccount.com from http://127.0.0.1:1/token: no answer", "check the key in the secret named by serviceAccountKeySecret"}},
		{name: "no key and no metadata server", cfg: GCSConfig{Endpoints: GCSEndpoints{MetadataHost: strings.TrimPrefix(dead.URL, "http://")}}, art: gcsArt("in", "b", "k"),
			want: []string{"gcs: download gs://b/k: credentials: no serviceAccountKeySecret is set, so workload identity is used: get a token from the GCE metadata server", "no answer (3 tries)", "set serviceAccountKeySecret on the artifact or on archiveLocation.gcs"}},
		{name: "key secret not mounted", cfg: GCSConfig{Secrets: SecretFiles{Root: t.TempDir()}}, art: withKey(gcsArt("in", "b", "k")),
			want: []string{"gcs: download gs://b/k: credentials: gcs.serviceAccountKeySecret: key \"key.json\" of secret \"sa\" is not mounted"}},
		{name: "not a service-account key", cfg: GCSConfig{Secrets: mapSecrets{"gcs.serviceAccountKeySecret": `{"type":"authorized_user"}`}}, art: withKey(gcsArt("in", "b", "k")),
			want: []string{`the key's type is "authorized_user", not "service_account"`, "IAM > Service accounts > Keys"}},
		{name: "unreachable server", cfg: emu(dead.URL), root: "-", art: gcsArt("in", "b", "k"),
			want: []string{"gcs: download gs://b/k at " + dead.URL + ": the server did not answer (5 tries)", "is the emulator STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(dead.URL, "http://") + " up and reachable from the pod?"}},
		{name: "bad emulator host", cfg: GCSConfig{Endpoints: GCSEndpoints{EmulatorHost: "ftp://x"}}, root: "-", art: gcsArt("in", "b", "k"),
			want: []string{`STORAGE_EMULATOR_HOST="ftp://x" is neither host[:port] nor an http(s) URL`}},
		{name: "no bucket", cfg: GCSConfig{Endpoints: GCSEndpoints{MetadataHost: "META"}}, art: wf.Artifact{Name: "in", GCS: &wf.GCSArtifact{Key: "k"}},
			want: []string{`gcs: artifact "in": bucket "" and key "k" must both be set`, "archiveLocation.gcs"}},
	}
	meta := newMetadataServer(t, "good")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.Endpoints.MetadataHost == "META" {
				tt.cfg.Endpoints.MetadataHost = meta
			}
			switch tt.root {
			case "":
				tt.root = srv.URL
			case "-":
				tt.root = ""
			}
			g := testGCS(tt.root, tt.cfg)
			fake.mu.Lock()
			fake.token = cmp.Or(tt.serverToken, "good") // "good": the metadata server's
			fake.mu.Unlock()
			var err error
			if tt.save {
				_, err = g.Save(t.Context(), file, tt.art)
			} else {
				err = g.Load(t.Context(), tt.art, filepath.Join(t.TempDir(), "x"))
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			if got := errors.Is(err, ErrNotFound); got != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", got, tt.notFound)
			}
		})
	}
}

// TestGCSRetries: 429 and 5xx answers are retried, up to Tries.
func TestGCSRetries(t *testing.T) {
	for _, tt := range []struct {
		name    string
		fail    []int
		wantErr string
	}{
		{"recovers", []int{503, 429}, ""},
		{"gives up", []int{500, 500, 500}, "gcs: download gs://b/k: 500 Internal Server Error: injected"},
		{"4xx is not retried", []int{400}, "400 Bad Request: injected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake, srv := newFakeGCS(t, "b")
			fake.put("b", "k", "data", nil)
			fake.fail = tt.fail
			g := testGCS(srv.URL, GCSConfig{Tries: 3, Endpoints: GCSEndpoints{EmulatorHost: "unused"}})
			err := g.Load(t.Context(), gcsArt("a", "b", "k"), filepath.Join(t.TempDir(), "x"))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Load: %v, want %q", err, tt.wantErr)
			}
			if want := min(len(tt.fail), 3); tt.name == "4xx is not retried" && fake.requests != 1 || tt.name != "4xx is not retried" && fake.requests < want {
				t.Errorf("%d requests for failures %v", fake.requests, tt.fail)
			}
		})
	}
}

// TestGCSTokenExchange: the service-account key's signed JWT is exchanged
// for a token (claims, grant type and RS256 signature checked), the token
// is sent and reused until a minute before it expires; a refusal says to
// check the key.
func TestGCSTokenExchange(t *testing.T) {
	var grants int
	var pub *rsa.PublicKey
	var refuse bool
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		grants++
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		if refuse {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
			return
		}
		parts := strings.Split(r.Form.Get("assertion"), ".")
		if len(parts) != 3 {
			t.Errorf("assertion has %d parts", len(parts))
			return
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig); err != nil {
			t.Errorf("JWT signature: %v", err)
		}
		var hdr, claims map[string]any
		h, _ := base64.RawURLEncoding.DecodeString(parts[0])
		c, _ := base64.RawURLEncoding.DecodeString(parts[1])
		_ = json.Unmarshal(h, &hdr)
		_ = json.Unmarshal(c, &claims)
		if hdr["alg"] != "RS256" || hdr["kid"] != "kid-1" || claims["iss"] != "argoexec@test.iam.gserviceaccount.com" ||
			claims["scope"] != gcsScope || claims["aud"] != "http://"+r.Host+"/token" || claims["exp"].(float64)-claims["iat"].(float64) != 3600 {
			t.Errorf("JWT header %v claims %v", hdr, claims)
		}
		_, _ = fmt.Fprintf(w, `{"access_token":"tok-%d","expires_in":3600,"token_type":"Bearer"}`, grants)
	}))
	defer tokenSrv.Close()
	keyJSON, key := testServiceAccountKey(t, tokenSrv.URL+"/token")
	pub = &key.PublicKey
	fake, srv := newFakeGCS(t, "b")
	fake.put("b", "k", "data", nil)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	g := testGCS(srv.URL, GCSConfig{Secrets: mapSecrets{"gcs.serviceAccountKeySecret": keyJSON}, Clock: clk})
	art := gcsArt("a", "b", "k")
	art.GCS.ServiceAccountKeySecret = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sa"}, Key: "key.json"}
	load := func() error { return g.Load(t.Context(), art, filepath.Join(t.TempDir(), "x")) }

	fake.token = "tok-1"
	if err := load(); err != nil {
		t.Fatalf("Load with the key's token: %v", err)
	}
	clk.SetTime(clk.Now().Add(58 * time.Minute))
	if err := load(); err != nil || grants != 1 {
		t.Fatalf("Load before expiry: %v, %d grants, want the token reused (1)", err, grants)
	}
	clk.SetTime(clk.Now().Add(time.Minute + time.Second))
	fake.token = "tok-2"
	if err := load(); err != nil || grants != 2 {
		t.Fatalf("Load within a minute of expiry: %v, %d grants, want a new token (2)", err, grants)
	}
	refuse = true
	clk.SetTime(clk.Now().Add(2 * time.Hour))
	err := load()
	for _, w := range []string{"gcs: download gs://b/k: credentials: get an access token for service account argoexec@test.iam.gserviceaccount.com", "refused (400 Bad Request: invalid_grant Invalid JWT Signature.)", "check the key in the secret named by serviceAccountKeySecret"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("refused grant: %v, want it to say %q", err, w)
		}
	}
}

// TestGCSWorkloadIdentity: with no key, the token comes from the metadata
// server (Metadata-Flavor: Google); with the emulator, no token is sent.
func TestGCSWorkloadIdentity(t *testing.T) {
	fake, srv := newFakeGCS(t, "b")
	fake.put("b", "k", "data", nil)
	fake.token = "meta-token"
	g := testGCS(srv.URL, GCSConfig{Endpoints: GCSEndpoints{MetadataHost: newMetadataServer(t, "meta-token")}})
	if err := g.Load(t.Context(), gcsArt("a", "b", "k"), filepath.Join(t.TempDir(), "x")); err != nil {
		t.Fatalf("Load with workload identity: %v", err)
	}
	fake.token = ""
	var auth []string
	check := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		fake.ServeHTTP(w, r)
	}))
	defer check.Close()
	e := NewGCS(GCSConfig{Endpoints: GCSEndpoints{EmulatorHost: strings.TrimPrefix(check.URL, "http://"), MetadataHost: "127.0.0.1:1"}}, discard())
	if err := e.Load(t.Context(), gcsArt("a", "b", "k"), filepath.Join(t.TempDir(), "x")); err != nil {
		t.Fatalf("Load from the emulator: %v", err)
	}
	if len(auth) == 0 || strings.Join(auth, "") != "" {
		t.Errorf("Authorization sent to the emulator: %q, want none", auth)
	}
}

// newMetadataServer serves token as the GCE metadata server does; it
// returns its host:port.
func newMetadataServer(t *testing.T, token string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" || r.URL.Path != "/computeMetadata/v1/instance/service-accounts/default/token" {
			http.Error(w, "not a metadata request", http.StatusForbidden)
			return
		}
		_, _ = fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, token)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u.Host
}

// testServiceAccountKey is a JSON key file with a new RSA key, tokens from
// tokenURI.
func testServiceAccountKey(t *testing.T, tokenURI string) (string, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "argoexec@test.iam.gserviceaccount.com",
		"private_key_id": "kid-1", "private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "token_uri": tokenURI})
	return string(js), key
}

// mapSecrets is a SecretReader of fixed values, by field.
type mapSecrets map[string]string

func (m mapSecrets) Secret(field string, _ *corev1.SecretKeySelector) (string, error) {
	v, ok := m[field]
	if !ok {
		return "", fmt.Errorf("%s: no such secret", field)
	}
	return v, nil
}

func mustWrite(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantFile(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Errorf("%s = %q, %v; want %q", p, b, err, want)
	}
}
