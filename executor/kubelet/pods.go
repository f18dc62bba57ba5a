package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/internal/backoff"
	"github.com/argoexec/argoexec/executor/internal/podexec"
)

// maxPollFailures is how many /pods polls in a row may fail with an error
// that could pass (a 5xx, a refused or reset connection) before a read gives
// up. The interval backs off to PollMax meanwhile, so with the default 1 s
// this rides out about 28 s of a kubelet that does not answer: a kubelet
// restart (an upgrade, a config change) takes a few seconds and leaves the
// containers running, and a step that runs for hours must not fail for it.
const maxPollFailures = 30

// urgentPollMax bounds the /pods interval of an urgent Follow (a kill's
// grace period, an exit exec has seen): the wait is short, and every poll
// interval of slack is added to it.
const urgentPollMax = 200 * time.Millisecond

// podPoller is the engine's view of the pod through the kubelet: /pods,
// polled from Config.PollInitial (100 ms), doubling while the containers'
// states do not change up to Config.PollMax (1 s), back to the start when
// one does.
//
// Why not poll faster, or alone: every poll reads the whole node's pod list
// (766 KB with 55 pods, Argo v3.3.8 polled it every 5 s and took 5.0 s from
// main's exit to outputs). A short fixed interval would pay that cost tens
// of times a second; the backoff bounds it to about one list a second for a
// long-running step, and the engine's exec fast path makes the common case
// fast without polling faster.
//
// Polls that fail in ways that pass (a 5xx, a refused connection, a
// restarted kubelet that does not list the pod yet) are retried for about
// maxPollFailures seconds (by Get as well as Follow: a Wait, a Kill or a
// GetExitCode alike); a refused token, a missing RBAC grant or a certificate
// that does not verify end them at once.
type podPoller struct {
	e     *Executor
	clock clock.Clock
}

// Get implements podexec.PodSource: one /pods read, retried while it
// fails in a way that may pass.
func (p *podPoller) Get(ctx context.Context) (*corev1.Pod, error) {
	return p.poll(ctx, p.e.cfg.PollInitial, p.e.cfg.PollMax)
}

// Follow implements podexec.PodSource.
func (p *podPoller) Follow(ctx context.Context, from *corev1.Pod, opts podexec.FollowOptions, fn func(*corev1.Pod) error) error {
	maxInterval := p.e.cfg.PollMax
	if opts.Urgent {
		maxInterval = min(urgentPollMax, maxInterval)
	}
	intervals, last := backoff.Exponential(p.clock, p.e.cfg.PollInitial, maxInterval), statesKey(from)
	for {
		interval := intervals.Next()
		if err := backoff.Sleep(ctx, p.clock, interval); err != nil {
			return err
		}
		pod, err := p.poll(ctx, interval, maxInterval)
		if err != nil {
			return err
		}
		if k := statesKey(pod); k != last {
			last = k
			intervals.Reset()
		}
		if err := fn(pod); err != nil {
			return err
		}
	}
}

// poll reads /pods; a failure that may pass is retried after interval,
// doubling up to maxInterval, at most maxPollFailures times in all.
func (p *podPoller) poll(ctx context.Context, interval, maxInterval time.Duration) (*corev1.Pod, error) {
	retry := backoff.Exponential(p.clock, interval, maxInterval)
	for failures := 1; ; failures++ {
		pod, err := p.read(ctx)
		switch {
		case err == nil:
			return pod, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !retryable(err) || failures >= maxPollFailures:
			return nil, err
		}
		p.e.log.WithError(err).Warnf("kubelet: poll %d/%d of /pods failed; retrying", failures, maxPollFailures)
		if err := retry.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

// errPollTimeout is the cause of a /pods read cut at Config.PollTimeout.
var errPollTimeout = errors.New("no answer within the poll timeout")

// read is one /pods read (getPod), cut when it takes longer than
// Config.PollTimeout on the poller's clock: a stuck read (a stalled
// connection, an overloaded kubelet) would otherwise hold up a Wait whose
// container has long exited. A cut read is retryable, and the idle
// connections are closed so that the retry dials a new one (an HTTP/2
// connection outlives a cancelled stream).
func (p *podPoller) read(ctx context.Context) (*corev1.Pod, error) {
	readCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := p.clock.NewTimer(p.e.cfg.PollTimeout)
	defer timer.Stop()
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		select {
		case <-timer.C():
			cancel(errPollTimeout)
		case <-done:
		}
	})
	pod, err := p.e.getPod(readCtx)
	close(done)
	wg.Wait()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(readCtx), errPollTimeout) {
		p.e.client.CloseIdleConnections()
		return nil, fmt.Errorf("list pods on %s: %w (%v): abandoned, to be retried on a new connection", p.e.cfg.addr(), errPollTimeout, p.e.cfg.PollTimeout)
	}
	return pod, err
}

// statesKey sums up the state of every container of pod, so that Follow can
// tell a change.
func statesKey(pod *corev1.Pod) string {
	var b strings.Builder
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			state := "waiting"
			switch {
			case st.State.Terminated != nil:
				state = "terminated"
			case st.State.Running != nil:
				state = "running"
			}
			fmt.Fprintf(&b, "%s=%s/%s;", st.Name, st.ContainerID, state)
		}
	}
	return b.String()
}

// retryable reports whether a failed /pods poll may succeed if tried again:
// server errors, broken connections, and a list without the pod (a kubelet
// that has just restarted lists no pods until it has synced with the API
// server); not authentication, authorisation or certificates.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code >= http.StatusInternalServerError || se.Code == http.StatusTooManyRequests
	}
	var te *TLSError
	if errors.As(err, &te) {
		return false
	}
	if errors.Is(err, ErrPodNotFound) || errors.Is(err, errPollTimeout) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

// ErrPodNotFound is wrapped by errors for a pod that the kubelet does not list.
var ErrPodNotFound = errors.New("pod not found on the kubelet")

// getPod fetches the kubelet's /pods and returns this executor's pod, with
// the status the kubelet's status manager holds (fresher than the API
// server's copy). The kubelet has no per-pod endpoint, so this reads the
// whole node's PodList (766 KB with 55 pods on the measured node): it is
// decoded as a stream, one item at a time into one reused buffer, and only
// the matching item is decoded into a Pod, so memory stays bounded by the
// largest single pod, not the list.
func (e *Executor) getPod(ctx context.Context) (*corev1.Pod, error) {
	resp, err := e.get(ctx, podsPath, nil)
	if err != nil {
		return nil, fmt.Errorf("list pods on %s: %w", e.cfg.addr(), err)
	}
	defer resp.Body.Close()
	pod, err := decodePod(resp.Body, e.cfg.Namespace, e.cfg.PodName)
	if err != nil {
		return nil, fmt.Errorf("list pods on %s: %w", e.cfg.addr(), err)
	}
	// Read what is left so the connection can be reused for the next poll
	// (a new TLS handshake costs more than skipping bytes).
	_, _ = io.Copy(io.Discard, resp.Body)
	return pod, nil
}

// decodePod reads a PodList from r and returns the item named
// namespace/name, stopping at it. It never returns nil, nil: a list without
// the pod is an error wrapping ErrPodNotFound.
//
// The list's top-level keys are read with encoding/json's tokenizer; the
// items array, nearly all of the body, is split into items by itemScanner,
// which only follows strings and brackets: encoding/json's Decoder, which
// validates every byte, spent 4-5 ns per byte there (9-14 ms per read of a
// 1.4 MB list of 253 pods, half of a kubelet wait's CPU; BENCHMARKS.md,
// issue 14). Only the item that holds the pod's name is parsed as JSON.
func decodePod(r io.Reader, namespace, name string) (*corev1.Pod, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("decode PodList: %w", err)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("decode PodList: %w", err)
		}
		if key != "items" {
			if err := skipValue(dec); err != nil {
				return nil, fmt.Errorf("decode PodList field %v: %w", key, err)
			}
			continue
		}
		pod, n, err := findItem(dec, r, namespace, name)
		if err != nil {
			return nil, fmt.Errorf("decode PodList item %d: %w", n, err)
		}
		if pod != nil {
			return pod, nil
		}
		return nil, fmt.Errorf("%w: %s/%s is not among the %d pods the kubelet lists "+
			"(is the kubelet host the pod's own node, status.hostIP?)", ErrPodNotFound, namespace, name, n)
	}
	return nil, fmt.Errorf("%w: %s/%s: the kubelet's PodList has no items", ErrPodNotFound, namespace, name)
}

// findItem walks the items array at dec (whose input is r) and decodes the
// matching item. It returns the pod (nil if absent) and how many items it
// looked at.
func findItem(dec *json.Decoder, r io.Reader, namespace, name string) (*corev1.Pod, int, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, 0, err
	}
	if tok == nil { // "items": null
		return nil, 0, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, 0, fmt.Errorf("items: want an array, got %v", tok)
	}
	// From here on the body is read by the scanner: what dec has buffered,
	// then the rest of r. dec is not used again.
	sc := itemScanner{r: bufio.NewReaderSize(io.MultiReader(dec.Buffered(), r), itemScanBuffer)}
	var hdr struct {
		Metadata struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	// Names are DNS labels: JSON never escapes them, so an item that does
	// not hold "name" verbatim is not ours, and a byte search (far cheaper
	// than a JSON decode) rules out most of the node's pods.
	quoted := []byte(`"` + name + `"`)
	n := 0
	for {
		raw, err := sc.next()
		if err != nil {
			return nil, n, err
		}
		if raw == nil {
			return nil, n, nil
		}
		n++
		if !bytes.Contains(raw, quoted) {
			continue
		}
		hdr.Metadata.Namespace, hdr.Metadata.Name = "", ""
		if err := json.Unmarshal(raw, &hdr); err != nil {
			return nil, n, err
		}
		if hdr.Metadata.Namespace != namespace || hdr.Metadata.Name != name {
			continue
		}
		pod := &corev1.Pod{}
		if err := json.Unmarshal(raw, pod); err != nil {
			return nil, n, err
		}
		return pod, n, nil
	}
}

// itemScanBuffer is the read buffer of itemScanner.
const itemScanBuffer = 32 * 1024

// itemScanner splits the elements of a JSON array of objects, read just
// after its '[', into the raw bytes of each object. It follows only what
// bounds an object (strings, their escapes, and brackets outside them), not
// whether the object is valid JSON: the object that is used is parsed by
// encoding/json, which says if it is not. One buffer is reused for every
// item, so memory is bounded by the largest item, not the list.
type itemScanner struct {
	r     *bufio.Reader
	raw   []byte
	count int
}

// next returns the next object of the array, nil at its ']'. The slice is
// valid until the next call.
func (s *itemScanner) next() ([]byte, error) {
	c, err := s.skipSpace()
	if err != nil {
		return nil, err
	}
	if c == ']' {
		return nil, nil
	}
	if s.count > 0 {
		if c != ',' {
			return nil, fmt.Errorf("after an item: want ',' or ']', got %q", c)
		}
		if c, err = s.skipSpace(); err != nil {
			return nil, err
		}
	}
	if c != '{' {
		return nil, fmt.Errorf("want an object, got %q", c)
	}
	s.count++
	return s.object()
}

// skipSpace reads up to and including the next byte that is not JSON
// white space, and returns it.
func (s *itemScanner) skipSpace() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, noEOF(err)
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// object reads the rest of an object whose '{' has been read, and returns
// the whole of it.
func (s *itemScanner) object() ([]byte, error) {
	s.raw = append(s.raw[:0], '{')
	depth, inString, escaped := 1, false, false
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				return nil, noEOF(err)
			}
		}
		chunk, _ := s.r.Peek(s.r.Buffered())
		i, end := 0, -1
		if escaped { // the byte after a backslash that ended the last chunk
			i, escaped = 1, false
		}
		for i < len(chunk) && end < 0 {
			if inString {
				q := bytes.IndexByte(chunk[i:], '"')
				if q < 0 {
					q = len(chunk) - i
				}
				if b := bytes.IndexByte(chunk[i:i+q], '\\'); b >= 0 {
					i += b + 2 // the backslash and the byte it escapes
					if i > len(chunk) {
						i, escaped = len(chunk), true
					}
					continue
				}
				i += q
				if i < len(chunk) { // the closing quote
					inString = false
					i++
				}
				continue
			}
			switch chunk[i] {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					end = i + 1
				}
			}
			i++
		}
		if end < 0 {
			end = len(chunk)
		}
		s.raw = append(s.raw, chunk[:end]...)
		if _, err := s.r.Discard(end); err != nil {
			return nil, err
		}
		if depth == 0 {
			return s.raw, nil
		}
	}
}

// noEOF makes an end of input inside the array an io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// expectDelim reads the next token and checks it is want.
func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

// skipValue reads past the next value without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
