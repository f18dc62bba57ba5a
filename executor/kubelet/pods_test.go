package kubelet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecodePod(t *testing.T) {
	ours := pod(map[string]corev1.ContainerState{"main": terminated(7)}, "main", "wait")
	list := func(items ...corev1.Pod) string {
		b, err := json.Marshal(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: items})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name     string
		body     string
		wantCode int32
		want     []string // error words; nil means ours is found
		notFound bool
	}{
		{name: "only ours", body: list(ours), wantCode: 7},
		{name: "among many", body: list(otherPod("a", "x"), otherPod(testNS, "y"), ours, otherPod("b", testPod)), wantCode: 7},
		{name: "same name other namespace", body: list(otherPod("other", testPod)), notFound: true, want: []string{"1 pods"}},
		{name: "items before metadata", body: `{"items":[` + mustJSON(t, ours) + `],"metadata":{"resourceVersion":"1"},"kind":"PodList"}`, wantCode: 7},
		{name: "metadata last in the item", body: `{"items":[{"status":{"phase":"Running"},"metadata":{"namespace":"` + testNS + `","name":"` + testPod + `"}}]}`},
		{name: "empty list", body: list(), notFound: true},
		{name: "items null", body: `{"kind":"PodList","items":null}`, notFound: true},
		{name: "no items key", body: `{"kind":"PodList","metadata":{}}`, notFound: true, want: []string{"no items"}},
		{name: "not an object", body: `[]`, want: []string{"decode PodList"}},
		{name: "items not an array", body: `{"items":{}}`, want: []string{"want an array"}},
		{name: "truncated", body: list(otherPod("a", "x"), ours)[:60], want: []string{"decode PodList"}},
		{name: "302 page", body: `<a href="https://apiserver/">Found</a>.`, want: []string{"decode PodList"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := decodePod(strings.NewReader(tt.body), testNS, testPod)
			if tt.want == nil && !tt.notFound {
				if err != nil {
					t.Fatalf("decodePod: %v", err)
				}
				if p.Namespace != testNS || p.Name != testPod {
					t.Fatalf("decodePod = %s/%s", p.Namespace, p.Name)
				}
				if tt.wantCode != 0 {
					st := p.Status.ContainerStatuses[0]
					if st.Name != "main" || st.State.Terminated == nil || st.State.Terminated.ExitCode != tt.wantCode {
						t.Errorf("main state = %+v, want exit %d", st.State, tt.wantCode)
					}
				}
				return
			}
			if p != nil || err == nil {
				t.Fatalf("decodePod = %v, %v: want nil and an error", p, err)
			}
			if tt.notFound != errors.Is(err, ErrPodNotFound) {
				t.Errorf("errors.Is(%v, ErrPodNotFound) = %v, want %v", err, !tt.notFound, tt.notFound)
			}
			wantContains(t, err, tt.want...)
		})
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// nodePodList builds a kubelet /pods body like the measured node's: n pods
// of roughly perPod bytes each (env, volumes, managed fields and a
// last-applied annotation, as real pods carry), ours last (the worst case).
func nodePodList(tb testing.TB, n, perPod int) []byte {
	tb.Helper()
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for i := range n {
		p := pod(map[string]corev1.ContainerState{"main": running(), "wait": running()}, "main", "wait")
		p.Namespace, p.Name = fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("pod-%d", i)
		if i == n-1 {
			p.Namespace, p.Name = testNS, testPod
		}
		for c := range p.Spec.Containers {
			for e := range 20 {
				p.Spec.Containers[c].Env = append(p.Spec.Containers[c].Env, corev1.EnvVar{Name: fmt.Sprintf("ENV_%d", e), Value: strings.Repeat("v", 20)})
			}
			p.Spec.Containers[c].Image = "registry.example/team/image:v1.2.3"
		}
		base := len(mustJSON(tb, p))
		if pad := perPod - base; pad > 0 {
			p.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", pad)}
		}
		list.Items = append(list.Items, p)
	}
	b, err := json.Marshal(list)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestDecodePodLargeList(t *testing.T) {
	body := nodePodList(t, 55, 14_500)
	if len(body) < 750_000 || len(body) > 850_000 {
		t.Fatalf("list is %d bytes, want about 800 KB", len(body))
	}
	p, err := decodePod(bytes.NewReader(body), testNS, testPod)
	if err != nil {
		t.Fatalf("decodePod: %v", err)
	}
	if p.Name != testPod || len(p.Spec.Containers) != 2 {
		t.Errorf("decoded %s with %d containers", p.Name, len(p.Spec.Containers))
	}
	// Bounded memory: decoding one ~800 KB list must allocate far less than
	// the list itself, since only one item is held at a time.
	allocs := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := decodePod(bytes.NewReader(body), testNS, testPod); err != nil {
				b.Fatal(err)
			}
		}
	})
	if per := allocs.AllocedBytesPerOp(); per > int64(len(body))/2 {
		t.Errorf("decodePod allocates %d bytes per %d-byte list; want under half the list", per, len(body))
	}
}

// BenchmarkDecodePod decodes a node's ~800 KB /pods (55 pods) the streaming
// way; BenchmarkDecodePodListWhole is the naive way, for comparison.
//
//	go test -run XXX -bench DecodePod -benchmem ./executor/kubelet/
func BenchmarkDecodePod(b *testing.B) {
	body := nodePodList(b, 55, 14_500)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodePod(bytes.NewReader(body), testNS, testPod); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePodListWhole(b *testing.B) {
	body := nodePodList(b, 55, 14_500)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var list corev1.PodList
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&list); err != nil {
			b.Fatal(err)
		}
	}
}

// TestItemScanner splits arrays whose strings hold what could be mistaken
// for an object's end (brackets, quotes and backslashes escaped) with read
// buffers small enough that every boundary falls inside a string, an escape
// and a bracket somewhere, and checks each item against encoding/json's.
func TestItemScanner(t *testing.T) {
	bodies := map[string]string{
		"brackets in strings":  `[{"a":"}]{["},{"b":"]"} , {"c":{"d":["}"]}}]`,
		"escaped quotes":       `[{"a":"x\"}\"y"},{"b":"\\"},{"c":"\\\"}"}]`,
		"escapes of all kinds": `[{"a":"\u005c\"\n\t\/\\\\"},{"b":"\\\\\\"}]`,
		"white space":          " \n\t[ \r\n{ \"a\" : [ 1 , { } ] } \n,\n\t{}\n ] ",
		"empty":                `[]`,
		"nested depth":         `[{"a":{"b":{"c":{"d":[[[{}]]]}}}},{"e":"{{{{"}]`,
	}
	for name, body := range bodies {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, size := range []int{16, 17, 19, 23, 4096} {
			t.Run(fmt.Sprintf("%s/%d", name, size), func(t *testing.T) {
				r := strings.NewReader(body[strings.IndexByte(body, '[')+1:])
				sc := itemScanner{r: bufio.NewReaderSize(r, size)}
				for i := 0; ; i++ {
					raw, err := sc.next()
					if err != nil {
						t.Fatalf("item %d: %v", i, err)
					}
					if raw == nil {
						if i != len(want) {
							t.Fatalf("%d items, want %d", i, len(want))
						}
						return
					}
					if i >= len(want) {
						t.Fatalf("item %d %q: want only %d", i, raw, len(want))
					}
					var got, exp bytes.Buffer
					if err := json.Compact(&got, raw); err != nil {
						t.Fatalf("item %d %q: %v", i, raw, err)
					}
					_ = json.Compact(&exp, want[i])
					if got.String() != exp.String() {
						t.Errorf("item %d = %s, want %s", i, got.String(), exp.String())
					}
				}
			})
		}
	}
	for name, body := range map[string]string{
		"truncated in a string": `{"a":"}`,
		"truncated":             `{"a":1`,
		"no comma":              `{}{}]`,
		"not an object":         `1]`,
	} {
		t.Run(name, func(t *testing.T) {
			sc := itemScanner{r: bufio.NewReaderSize(strings.NewReader(body), 16)}
			var err error
			for range 3 {
				var raw []byte
				if raw, err = sc.next(); err != nil || raw == nil {
					break
				}
			}
			if err == nil {
				t.Fatalf("scanning %q: no error", body)
			}
		})
	}
}
