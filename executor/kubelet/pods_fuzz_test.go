package kubelet

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzDecodePod feeds arbitrary bytes to decodePod as the kubelet's /pods
// body. It must never return nil, nil; a pod it returns is exactly the one
// asked for; and on a well-formed list (one "items" array of objects) it
// agrees with a plain json.Unmarshal of the whole list: the same pod when
// the list holds it, ErrPodNotFound when it does not.
func FuzzDecodePod(f *testing.F) {
	ours := pod(map[string]corev1.ContainerState{"main": terminated(7)}, "main", "wait")
	list := func(items ...corev1.Pod) string {
		return mustJSON(f, corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: items})
	}
	for _, body := range []string{
		list(ours),
		list(otherPod("a", "x"), otherPod(testNS, "y"), ours, otherPod("b", testPod)),
		list(otherPod("other", testPod)),
		`{"items":[` + mustJSON(f, ours) + `],"metadata":{"resourceVersion":"1"},"kind":"PodList"}`,
		`{"items":[{"status":{"phase":"Running"},"metadata":{"namespace":"` + testNS + `","name":"` + testPod + `"}}]}`,
		list(),
		`{"kind":"PodList","items":null}`,
		`{"kind":"PodList","metadata":{}}`,
		`[]`,
		`{"items":{}}`,
		list(otherPod("a", "x"), ours)[:60],
		`<a href="https://apiserver/">Found</a>.`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodePod(bytes.NewReader(body), testNS, testPod)
		if p == nil && err == nil {
			t.Fatal("decodePod = nil, nil")
		}
		if p != nil && (err != nil || p.Namespace != testNS || p.Name != testPod) {
			t.Fatalf("decodePod = %s/%s, %v; want %s/%s, nil", p.Namespace, p.Name, err, testNS, testPod)
		}
		want, found, wellFormed := referencePod(body)
		switch {
		case !wellFormed:
		case found && err != nil:
			t.Fatalf("decodePod: %v; the list holds the pod", err)
		case found && !reflect.DeepEqual(p, want):
			t.Fatalf("decodePod = %+v\nwant %+v", p, want)
		case !found && !errors.Is(err, ErrPodNotFound):
			t.Fatalf("decodePod = %v, %v; want an error wrapping ErrPodNotFound", p, err)
		}
	})
}

// referencePod decodes body whole and finds testNS/testPod in it. The list
// is well formed when it is one JSON object whose only "items" key (exact
// case) is an array of objects with string names, each decoding into a
// Pod, and the pod's item spells its name verbatim (names are DNS labels,
// which the kubelet never escapes).
func referencePod(body []byte) (pod *corev1.Pod, found, wellFormed bool) {
	if !json.Valid(body) {
		return nil, false, false
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil || bytes.Count(body, []byte(`"items"`)) != 1 {
		return nil, false, false
	}
	for k := range doc {
		if k != "items" && strings.EqualFold(k, "items") {
			return nil, false, false
		}
	}
	raw, ok := doc["items"]
	if !ok {
		return nil, false, true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false, string(raw) == "null"
	}
	for _, it := range items {
		var p corev1.Pod
		if json.Unmarshal(it, &p) != nil {
			return nil, false, false
		}
		if p.Namespace != testNS || p.Name != testPod {
			continue
		}
		if !bytes.Contains(it, []byte(`"`+testPod+`"`)) {
			return nil, false, false
		}
		if !found {
			pod, found = &p, true
		}
	}
	return pod, found, true
}
