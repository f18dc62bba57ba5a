package podexec

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKillCommandsUnderShells runs Kill's shell commands under the shells
// images have as /bin/sh: dash (Debian, Ubuntu), busybox (Alpine, busybox)
// and bash (Fedora, UBI), each as a process that is not PID 1 beside a PID 1 shell and a
// child, as in a container. killOthers must kill the child and exit 0, and
// with nothing left to kill it must fail in the way nothingToKill accepts.
//
// `kill -1` signals every process the caller may signal, so each run is
// confined to a new PID namespace (unshare --pid, as root; else an
// unprivileged user namespace too) and as uid 65534 where it can drop to
// it, and the script refuses to signal anything unless it is that
// namespace's PID 1. Never run these commands outside such a namespace.
func TestKillCommandsUnderShells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real shells in a new PID namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) is not installed: cannot confine kill -1 to a new PID namespace")
	}
	shells := []struct{ name, bin string }{{"dash", "dash"}, {"busybox", "busybox"}, {"bash", "bash"}}
	for _, sh := range shells {
		t.Run(sh.name, func(t *testing.T) {
			bin, err := exec.LookPath(sh.bin)
			if err != nil {
				t.Skipf("%s is not installed (hack/deps.sh installs dash and busybox-static)", sh.bin)
			}
			shell := []string{bin}
			if sh.name == "busybox" {
				shell = append(shell, "sh")
			}
			// confined runs script as PID 1 of a new PID namespace.
			confined := func(t *testing.T, script string, env ...string) (string, error) {
				t.Helper()
				args := []string{"--pid", "--fork", "--mount-proc", "--kill-child"}
				if os.Geteuid() != 0 {
					args = append([]string{"--user", "--map-root-user"}, args...)
				} else if setpriv, err := exec.LookPath("setpriv"); err == nil {
					args = append(args, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups")
				}
				args = append(args, shell...)
				args = append(args, "-c", `[ "$$" = 1 ] || { echo "not PID 1 of a new PID namespace: refusing kill -1" >&2; exit 99; }`+"\n"+script)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, unshare, args...)
				cmd.Env = append(os.Environ(), env...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				if strings.Contains(out.String(), "unshare: ") {
					t.Skipf("cannot create a PID namespace here: %s", out.String())
				}
				return out.String(), err
			}
			// The kill command runs in a shell that is not PID 1, as in an
			// exec session; the child ignores SIGTERM as a stubborn
			// sidecar's would, so only SIGKILL ends it.
			quoted := "'" + strings.Join(shell, "' '") + "'"
			out, err := confined(t, `trap '' TERM
sleep 5 & child=$!
`+quoted+` -c "$KILL_CMD"; rc=$?
wait $child; echo "kill=$rc child=$?"`, "KILL_CMD="+killOthers[2])
			if err != nil {
				t.Fatalf("%s: %v\n%s", sh.name, err, out)
			}
			if !strings.Contains(out, "kill=0 child=137") {
				t.Errorf("%s -c %q beside a child that ignores SIGTERM: %q; want the kill to exit 0 and the child to die of SIGKILL (kill=0 child=137)", sh.name, killOthers[2], out)
			}

			// Nothing but PID 1 and the kill shell: ESRCH, accepted.
			out, err = confined(t, quoted+` -c "$KILL_CMD"; echo "kill=$?"`, "KILL_CMD="+killOthers[2])
			if err != nil {
				t.Fatalf("%s: %v\n%s", sh.name, err, out)
			}
			if !strings.Contains(out, "kill=1") || !strings.Contains(strings.ToLower(out), "no such process") {
				t.Errorf("%s -c %q with nothing to kill: %q; want exit 1 and \"No such process\", which nothingToKill accepts", sh.name, killOthers[2], out)
			}

			// kill -s TERM 1 reaches PID 1.
			out, err = confined(t, `trap 'echo got-term' TERM
`+quoted+` -c "$KILL_CMD"; echo "kill=$?"`, "KILL_CMD="+termPID1[2])
			if err != nil {
				t.Fatalf("%s: %v\n%s", sh.name, err, out)
			}
			if !strings.Contains(out, "got-term") || !strings.Contains(out, "kill=0") {
				t.Errorf("%s -c %q: %q; want PID 1 to get SIGTERM and the kill to exit 0", sh.name, termPID1[2], out)
			}
		})
	}
}
