package kubelet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
)

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
	resp, err := e.get(ctx, "/pods", nil)
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
		pod, n, err := findItem(dec, namespace, name)
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

// findItem walks the items array at dec and decodes the matching item. It
// returns the pod (nil if absent) and how many items it looked at.
func findItem(dec *json.Decoder, namespace, name string) (*corev1.Pod, int, error) {
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
	var (
		raw json.RawMessage // reused: UnmarshalJSON appends into raw[:0]
		hdr struct {
			Metadata struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"metadata"`
		}
	)
	// Names are DNS labels: JSON never escapes them, so an item that does
	// not hold "name" verbatim is not ours, and a byte search (far cheaper
	// than a JSON decode) rules out most of the node's pods.
	quoted := []byte(`"` + name + `"`)
	n := 0
	for dec.More() {
		if err := dec.Decode(&raw); err != nil {
			return nil, n, err
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
	return nil, n, nil
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
