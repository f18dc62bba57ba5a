package git

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// sshGitServer serves the repositories under root over SSH on 127.0.0.1:
// each `git-upload-pack 'PATH'` exec runs Debian's git upload-pack on
// root/PATH. Only the key client authenticates. It returns the address.
func sshGitServer(t *testing.T, root string, client ssh.PublicKey) string {
	t.Helper()
	_, hostKey, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(hostKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(client.Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serveSSH(c, cfg, root) })
		}
	})
	return l.Addr().String()
}

func serveSSH(c net.Conn, cfg *ssh.ServerConfig, root string) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		for req := range creqs {
			if req.Type != "exec" || len(req.Payload) < 4 {
				_ = req.Reply(false, nil)
				continue
			}
			command := string(req.Payload[4:])
			repo, ok := strings.CutPrefix(command, "git-upload-pack ")
			if !ok {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			cmd := exec.Command("git", "upload-pack", filepath.Join(root, strings.Trim(repo, "'/")))
			cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
			code := uint32(0)
			if err := cmd.Run(); err != nil {
				code = 1
			}
			status := make([]byte, 4)
			binary.BigEndian.PutUint32(status, code)
			_, _ = ch.SendRequest("exit-status", false, status)
			ch.Close()
			break
		}
	}
}

// TestLoadSSH: sshPrivateKeySecret over a real SSH transport (git
// upload-pack behind an SSH server): with insecureIgnoreHostKey the clone
// works; without it, the unknown host key is refused saying what to set.
func TestLoadSSH(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (hack/deps.sh)")
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	gitRun(t, root, "init", "-q", "-b", "main", work)
	if err := os.WriteFile(filepath.Join(work, "a"), []byte("over ssh"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, work, "add", "a")
	gitRun(t, work, "commit", "-qm", "one")
	gitRun(t, root, "clone", "-q", "--bare", work, filepath.Join(root, "repo.git"))

	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, _ := ssh.NewPublicKey(pub)
	addr := sshGitServer(t, root, sshPub)
	known := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(known, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_KNOWN_HOSTS", known) // no host is known
	creds := secretMap{"git/key": string(pem.EncodeToMemory(block))}
	repo := "ssh://git@" + addr + "/repo.git"
	tests := []struct {
		name    string
		art     wf.GitArtifact
		wantErr string
	}{
		{name: "insecureIgnoreHostKey", art: wf.GitArtifact{Repo: repo, SSHPrivateKeySecret: sel("git", "key"), InsecureIgnoreHostKey: true}},
		{name: "host key not known", art: wf.GitArtifact{Repo: repo, SSHPrivateKeySecret: sel("git", "key")}, wantErr: "set insecureIgnoreHostKey: true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "checkout")
			err := Load(context.Background(), &tt.art, creds, dest, quiet())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dest, "a")); err != nil || string(b) != "over ssh" {
				t.Errorf("a = %q, %v", b, err)
			}
		})
	}
}
