//go:build e2e

// The docker backend on the testbed's real dockerd (Docker 20.10, API 1.41). Kubernetes here
// runs on containerd and cri-dockerd is not available, so these tests start "pod" containers
// on dockerd directly with the labels cri-dockerd sets: one pod UID, a POD sandbox whose
// network the others join, and the pod's containers named k8s_<c>_<pod>_<ns>_<uid>_<attempt>.
package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/docker"
	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// dockerPod is a group of containers on dockerd labelled as one pod.
type dockerPod struct {
	t         testing.TB
	env       framework.Env
	d         *framework.Docker
	namespace string
	name      string
	uid       string
	sandbox   string
	ids       map[string]string // container name -> id
}

// newDockerPod creates the pod's POD sandbox (running) and registers the removal of every
// container of the pod at the end of the test.
func newDockerPod(t testing.TB) *dockerPod {
	t.Helper()
	env := framework.LoadEnv()
	d := framework.NewDocker(env.DockerSock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("the docker backend's e2e needs the testbed's dockerd: %v", err)
	}
	suffix := randHex(t)
	p := &dockerPod{t: t, env: env, d: d, namespace: "e2e-docker", name: "pod-" + suffix, uid: "uid-" + suffix + "-" + randHex(t), ids: map[string]string{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := d.ListContainers(ctx, docker.LabelPodUID+"="+p.uid)
		if err != nil {
			t.Errorf("list the pod's containers for clean-up: %v", err)
			return
		}
		for _, c := range cs {
			if err := d.RemoveContainer(ctx, c.Id); err != nil {
				t.Errorf("remove container %s: %v", c.Id, err)
			}
		}
	})
	p.sandbox = p.create(ctx, docker.SandboxContainerName, "sleep 3600", "podsandbox", "")
	if err := d.StartContainer(ctx, p.sandbox); err != nil {
		t.Fatalf("start POD sandbox: %v", err)
	}
	return p
}

// create creates one container of the pod (not started) running script in busybox:local.
func (p *dockerPod) create(ctx context.Context, name, script, dockerType, attempt string) string {
	p.t.Helper()
	if attempt == "" {
		attempt = "0"
	}
	labels := framework.CRIDockerdLabels(p.namespace, p.name, p.uid, name)
	labels["io.kubernetes.docker.type"] = dockerType
	labels[docker.LabelRestartCount] = attempt
	spec := framework.ContainerSpec{
		Image:      p.env.BusyboxImage,
		Entrypoint: []string{"/bin/sh", "-c", script},
		Labels:     labels,
	}
	if p.sandbox != "" {
		spec.HostConfig.NetworkMode = "container:" + p.sandbox
	}
	dockerName := strings.Join([]string{"k8s", name, p.name, p.namespace, p.uid, attempt}, "_")
	id, err := p.d.CreateContainer(ctx, dockerName, spec)
	if err != nil {
		p.t.Fatalf("create container %s from %s (hack/images.sh builds busybox:local): %v", name, p.env.BusyboxImage, err)
	}
	p.ids[name] = id
	return id
}

// run creates and starts the containers, in order.
func (p *dockerPod) run(ctx context.Context, cs []executortest.Container) {
	p.t.Helper()
	var ids []string
	for _, c := range cs {
		ids = append(ids, p.create(ctx, c.Name, c.Script, "container", ""))
	}
	for i, id := range ids {
		if err := p.d.StartContainer(ctx, id); err != nil {
			p.t.Fatalf("start container %s: %v", cs[i].Name, err)
		}
	}
}

// executor returns the docker backend bound to the pod.
func (p *dockerPod) executor(findTimeout time.Duration) *docker.Executor {
	p.t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(testWriter{p.t})
	x, err := docker.New(docker.Config{SockPath: p.env.DockerSock, Namespace: p.namespace, PodName: p.name, PodUID: p.uid, FindTimeout: findTimeout},
		logrus.NewEntry(log).WithField("pod", p.namespace+"/"+p.name))
	if err != nil {
		p.t.Fatalf("docker.New: %v", err)
	}
	p.t.Cleanup(func() { x.Close() })
	return x
}

// testWriter sends the backend's log lines to the test log.
// The conformance suite on the real dockerd: files (running and stopped containers), logs
// demultiplexed, exit codes, Wait through the wait API, Kill from outside the PID namespace.
func TestDockerConformance(t *testing.T) {
	executortest.RunConformance(t, executortest.Env{
		Backend: "docker",
		Start: func(t *testing.T, cs []executortest.Container) executor.ContainerRuntimeExecutor {
			p := newDockerPod(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p.run(ctx, cs)
			return p.executor(30 * time.Second)
		},
		SignalsFromOutside: true,
	})
}

// Only the docker backend reads a stopped container's files, including those of its image's
// base layer: exec-based backends need a running container with tar in it.
func TestDockerBaseLayerOfStoppedContainer(t *testing.T) {
	p := newDockerPod(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p.run(ctx, []executortest.Container{{Name: "main", Script: "echo written > /tmp/out; exit 0"}})
	x := p.executor(30 * time.Second)
	if err := x.Wait(ctx, []string{"main"}); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	passwd, err := x.GetFileContents(ctx, "main", "/etc/passwd")
	if err != nil {
		t.Fatalf("GetFileContents(/etc/passwd) of a stopped container's base layer: %v", err)
	}
	if !strings.HasPrefix(passwd, "root:x:0:0:") {
		t.Errorf("/etc/passwd = %q, want the image's root entry", passwd)
	}
	out, err := x.GetFileContents(ctx, "main", "/tmp/out")
	if err != nil || out != "written\n" {
		t.Errorf("GetFileContents(/tmp/out) of a stopped container = %q, %v; want %q", out, err, "written\n")
	}
	// A directory of the image layer, symbolic links (bin/sh -> busybox) included.
	dest := filepath.Join(t.TempDir(), "bin.tgz")
	if err := x.CopyFile(ctx, "main", "/bin", dest, gzip.BestSpeed); err != nil {
		t.Fatalf("CopyFile(/bin) of a stopped container's base layer: %v", err)
	}
	names := tgzNames(t, dest)
	for _, want := range []string{"bin/busybox", "bin/sh", "bin/tar"} {
		if !slices.Contains(names, want) {
			t.Errorf("archive of /bin lacks %s (has %d entries)", want, len(names))
		}
	}
}

// A container that never appears: Wait gives up after FindTimeout naming the labels searched
// and the other backends, where Argo v3.3.8 polled `docker ps` forever.
func TestDockerWaitNotFound(t *testing.T) {
	p := newDockerPod(t)
	x := p.executor(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err := x.Wait(ctx, []string{"main"})
	took := time.Since(start)
	if err == nil {
		t.Fatal("Wait for a container that does not exist returned nil")
	}
	t.Logf("error after %s: %v", took.Round(time.Millisecond), err)
	for _, w := range []string{"io.kubernetes.pod.uid=" + p.uid, "io.kubernetes.container.name=main", "k8sapi", "kubelet"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not name %q", w)
		}
	}
	if took > 5*time.Second {
		t.Errorf("Wait took %s with FindTimeout 2s", took)
	}
}

// Wait is started before the container exists; the container is created, started later and
// exits; Wait returns. Its latency is measured from the engine's FinishedAt.
func TestDockerWaitLatency(t *testing.T) {
	const runs = 7
	var lat []time.Duration
	for i := range runs {
		p := newDockerPod(t)
		x := p.executor(30 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		done := make(chan error, 1)
		var returned time.Time
		go func() {
			err := x.Wait(ctx, []string{"main"})
			returned = time.Now()
			done <- err
		}()
		p.run(ctx, []executortest.Container{{Name: "main", Script: "sleep 0.3; exit 0"}})
		if err := <-done; err != nil {
			cancel()
			t.Fatalf("run %d: Wait: %v", i, err)
		}
		finished := finishedAt(t, ctx, p.d, p.ids["main"])
		cancel()
		lat = append(lat, returned.Sub(finished))
	}
	slices.Sort(lat)
	p50 := lat[len(lat)/2]
	t.Logf("Wait latency from the container's exit (engine FinishedAt), %d runs: p50 %s, min %s, max %s (goal p50 <= 100ms)",
		runs, p50.Round(time.Microsecond), lat[0].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	if p50 > 500*time.Millisecond {
		t.Errorf("Wait latency p50 %s: the wait API should see the exit at once", p50)
	}
}

func finishedAt(t testing.TB, ctx context.Context, d *framework.Docker, id string) time.Time {
	t.Helper()
	var ins struct {
		State struct{ FinishedAt time.Time }
	}
	if err := d.Do(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, &ins); err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return ins.State.FinishedAt
}

func tgzNames(t testing.TB, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		names = append(names, hdr.Name)
	}
}

// ---------------------------------------------------------------- copy throughput

const copyEnvHelper = "ARGOEXEC_E2E_DOCKER_COPY_HELPER" // "<sock> <ns> <pod> <uid> <src>"

// bigFilePod starts a pod whose main writes size random bytes to /tmp/big.bin and exits.
func bigFilePod(t testing.TB, size int64) (*dockerPod, *docker.Executor) {
	p := newDockerPod(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p.run(ctx, []executortest.Container{{Name: "main", Script: fmt.Sprintf("head -c %d /dev/urandom > /tmp/big.bin", size)}})
	x := p.executor(30 * time.Second)
	if err := x.Wait(ctx, []string{"main"}); err != nil {
		t.Fatalf("Wait for the writer: %v", err)
	}
	if code, err := x.GetExitCode(ctx, "main"); err != nil || code != 0 {
		t.Fatalf("writer exited %d, %v", code, err)
	}
	return p, x
}

// TestDockerCopyFlatRSS gates that docker CopyFile streams: the peak RSS of a fresh process
// doing one CopyFile (compression off) of 64 MiB and of 256 MiB must not grow with the file.
// (CopyFile's throughput against docker cp is TestDockerCopyThroughput's, build tag bench.)
func TestDockerCopyFlatRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 320 MiB; not with -short")
	}
	small, _ := bigFilePod(t, 64<<20)
	big, _ := bigFilePod(t, 256<<20)
	base64, rss64 := helperPeakRSS(t, small, "/tmp/big.bin")
	base256, rss256 := helperPeakRSS(t, big, "/tmp/big.bin")
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	t.Logf("peak RSS of a fresh e2e.test process doing one CopyFile (compression off): 64 MiB file %.1f MiB (%.1f MiB before the copy), 256 MiB file %.1f MiB (%.1f MiB before); the copy adds %.1f and %.1f MiB (goal: flat in file size)",
		mib(rss64), mib(base64), mib(rss256), mib(base256), mib(rss64-base64), mib(rss256-base256))
	if rss256-base256 > rss64-base64+8<<20 {
		t.Errorf("peak RSS grows with file size: the copy adds %d bytes for 64 MiB, %d for 256 MiB", rss64-base64, rss256-base256)
	}
}

// helperPeakRSS re-runs this test binary as a helper that does one CopyFile and exits, and
// returns its peak RSS before the copy (VmHWM, which the helper prints) and at exit (the
// kernel's maxrss). The test binary links every e2e test's dependencies, so the figure
// before the copy is the baseline to subtract.
func helperPeakRSS(t *testing.T, p *dockerPod, src string) (before, peak int64) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "helper.tgz")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDockerCopyHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), copyEnvHelper+"="+strings.Join([]string{p.env.DockerSock, p.namespace, p.name, p.uid, src, dest}, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("copy helper: %v\n%s", err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatalf("no rusage for the helper")
	}
	for _, line := range strings.Split(string(out), "\n") {
		if _, v, ok := strings.Cut(line, "VmHWM before copy: "); ok {
			before, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if before == 0 {
		t.Fatalf("copy helper did not report its VmHWM:\n%s", out)
	}
	return before, ru.Maxrss * 1024 // KiB on Linux
}

// vmHWM is this process's peak RSS so far, from /proc/self/status.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// TestDockerCopyHelper is the process helperPeakRSS measures; it does nothing unless started
// by it.
func TestDockerCopyHelper(t *testing.T) {
	args := strings.Fields(os.Getenv(copyEnvHelper))
	if len(args) != 6 {
		t.Skip("helper process for TestDockerCopyFlatRSS")
	}
	x, err := docker.New(docker.Config{SockPath: args[0], Namespace: args[1], PodName: args[2], PodUID: args[3]}, logrus.NewEntry(logrus.New()))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fmt.Printf("VmHWM before copy: %d\n", vmHWM())
	if err := x.CopyFile(context.Background(), "main", args[4], args[5], gzip.NoCompression); err != nil {
		t.Fatal(err)
	}
}
