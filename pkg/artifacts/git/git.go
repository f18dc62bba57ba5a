// Package git checks out git input artifacts as Argo v3.3.8's git driver
// does (workflow/artifacts/git): a clone of repo (depth, submodules unless
// disableSubmodules), then the fetch refspecs, then the revision (a branch,
// a tag or a commit) checked out, with username/password or SSH-key
// credentials. It is go-git only: no git program is needed (Argo's image
// runs `git checkout`). go-git is big, so this package is linked into
// argoexec-main alone, which init runs for git inputs (artifacts.GitCommand).
package git

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Secrets reads the secret values an artifact names (artifacts.SecretFiles).
type Secrets interface {
	// Secret returns the value of sel; field names the artifact's field
	// that names it, for messages.
	Secret(field string, sel *corev1.SecretKeySelector) (string, error)
}

// sshURL matches an SSH URL with a user (git@host:org/repo,
// ssh://user@host/repo), as Argo's GetUser reads it.
var sshURL = regexp.MustCompile("^(ssh://)?([^/:]*?)@[^@]+$")

// sshUser is the user an SSH URL names, else "git", as Argo's.
func sshUser(url string) string {
	if m := sshURL.FindStringSubmatch(url); len(m) > 2 {
		return m[2]
	}
	return "git"
}

// auth is the credentials art names: its SSH key, else its user name and
// password, else none.
func auth(art *wf.GitArtifact, secrets Secrets) (transport.AuthMethod, error) {
	if art.SSHPrivateKeySecret != nil {
		key, err := secrets.Secret("sshPrivateKeySecret", art.SSHPrivateKeySecret)
		if err != nil {
			return nil, err
		}
		keys, err := gitssh.NewPublicKeys(sshUser(art.Repo), []byte(key), "")
		if err != nil {
			return nil, fmt.Errorf("sshPrivateKeySecret: the key in secret %q is not a private key go-git can read (PEM or OpenSSH, without a passphrase): %w", art.SSHPrivateKeySecret.Name, err)
		}
		if art.InsecureIgnoreHostKey {
			keys.HostKeyCallback = ssh.InsecureIgnoreHostKey()
		}
		return keys, nil
	}
	if art.UsernameSecret == nil && art.PasswordSecret == nil {
		return nil, nil
	}
	var user, pass string
	var errs []error
	if art.UsernameSecret != nil {
		v, err := secrets.Secret("usernameSecret", art.UsernameSecret)
		user = v
		errs = append(errs, err)
	}
	if art.PasswordSecret != nil {
		v, err := secrets.Secret("passwordSecret", art.PasswordSecret)
		pass = v
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &githttp.BasicAuth{Username: user, Password: pass}, nil
}

// Load checks the repository art names out at dest, which must not exist
// or be empty, as Argo v3.3.8's git driver does. Errors name the
// repository and say what to check.
func Load(ctx context.Context, art *wf.GitArtifact, secrets Secrets, dest string, log *logrus.Entry) error {
	if art == nil || art.Repo == "" {
		return errors.New("git: the artifact has no repo")
	}
	a, err := auth(art, secrets)
	if err != nil {
		return fmt.Errorf("git: %s: %w", art.Repo, err)
	}
	recurse := gogit.DefaultSubmoduleRecursionDepth
	if art.DisableSubmodules {
		recurse = gogit.NoRecurseSubmodules
	}
	depth := 0
	if art.Depth != nil {
		depth = int(*art.Depth)
	}
	log = log.WithField("repo", art.Repo)
	log.WithFields(logrus.Fields{"depth": depth, "submodules": !art.DisableSubmodules}).Info("git: cloning")
	repo, err := gogit.PlainCloneContext(ctx, dest, false, &gogit.CloneOptions{URL: art.Repo, Auth: a, Depth: depth, RecurseSubmodules: recurse})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		log.Info("git: the repository is empty")
		return initEmpty(art, dest)
	}
	if err != nil {
		return describe("clone", art, err)
	}
	if len(art.Fetch) > 0 {
		specs := make([]config.RefSpec, len(art.Fetch))
		for i, s := range art.Fetch {
			specs[i] = config.RefSpec(s)
		}
		opts := &gogit.FetchOptions{Auth: a, RefSpecs: specs, Depth: depth}
		if err := opts.Validate(); err != nil {
			return fmt.Errorf("git: %s: fetch %v: %w", art.Repo, art.Fetch, err)
		}
		if err := repo.FetchContext(ctx, opts); err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
			return describe("fetch "+strings.Join(art.Fetch, " "), art, err)
		}
	}
	if art.Revision == "" {
		return nil
	}
	if err := checkout(repo, strings.TrimPrefix(art.Revision, "refs/heads/"), log); err != nil {
		return fmt.Errorf("git: %s: %w", art.Repo, err)
	}
	if art.DisableSubmodules {
		return nil
	}
	wt, err := repo.Worktree()
	if err != nil {
		return fmt.Errorf("git: %s: %w", art.Repo, err)
	}
	subs, err := wt.Submodules()
	if err != nil {
		return fmt.Errorf("git: %s: submodules: %w", art.Repo, err)
	}
	if err := subs.UpdateContext(ctx, &gogit.SubmoduleUpdateOptions{Init: true, RecurseSubmodules: gogit.DefaultSubmoduleRecursionDepth, Auth: a}); err != nil {
		return describe("update submodules", art, err)
	}
	return nil
}

// checkout checks rev out as `git checkout REV --` does: a commit (full or
// abbreviated) or a tag detached, a branch of origin as a local branch
// that tracks it.
func checkout(repo *gogit.Repository, rev string, log *logrus.Entry) error {
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if h, err := repo.ResolveRevision(plumbing.Revision(rev)); err == nil {
		log.WithFields(logrus.Fields{"revision": rev, "commit": h.String()}).Info("git: checking out")
		if _, err := repo.Reference(plumbing.NewBranchReferenceName(rev), false); err == nil {
			return wt.Checkout(&gogit.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(rev), Force: true})
		}
		return wt.Checkout(&gogit.CheckoutOptions{Hash: *h, Force: true})
	}
	remote := plumbing.NewRemoteReferenceName(gogit.DefaultRemoteName, rev)
	ref, err := repo.Reference(remote, true)
	if err != nil {
		return fmt.Errorf("revision %q is neither a commit, a tag nor a branch of the repository (with depth, it may be outside the history cloned): %w", rev, err)
	}
	log.WithFields(logrus.Fields{"revision": rev, "commit": ref.Hash().String()}).Info("git: checking out the branch")
	branch := plumbing.NewBranchReferenceName(rev)
	if err := wt.Checkout(&gogit.CheckoutOptions{Branch: branch, Hash: ref.Hash(), Create: true, Force: true}); err != nil {
		return err
	}
	return repo.CreateBranch(&config.Branch{Name: rev, Remote: gogit.DefaultRemoteName, Merge: branch})
}

// initEmpty makes dest what Argo's driver makes of an empty repository: a
// new repository with origin and the revision's branch (master by default).
func initEmpty(art *wf.GitArtifact, dest string) error {
	if err := os.RemoveAll(dest); err != nil {
		return fmt.Errorf("git: %s: %w", art.Repo, err)
	}
	r, err := gogit.PlainInit(dest, false)
	if err != nil {
		return fmt.Errorf("git: %s: init the empty repository: %w", art.Repo, err)
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: gogit.DefaultRemoteName, URLs: []string{art.Repo}}); err != nil {
		return fmt.Errorf("git: %s: %w", art.Repo, err)
	}
	branch := art.Revision
	if branch == "" {
		branch = "master"
	}
	if err := r.CreateBranch(&config.Branch{Name: branch, Remote: gogit.DefaultRemoteName, Merge: plumbing.Master}); err != nil {
		return fmt.Errorf("git: %s: %w", art.Repo, err)
	}
	return nil
}

// isUnreachable says whether err is a failure to reach the server at all
// (refused, reset, timed out, no such host), not an answer.
func isUnreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}

// describe says what to check for an error talking to the repository.
func describe(op string, art *wf.GitArtifact, err error) error {
	where := fmt.Sprintf("git: %s %s", op, art.Repo)
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s: the repository does not exist (or the credentials may not see it); check repo: %w", where, err)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%s: credentials refused or missing; check the secrets named by usernameSecret and passwordSecret (or sshPrivateKeySecret): %w", where, err)
	case strings.Contains(err.Error(), "knownhosts") || strings.Contains(err.Error(), "known_hosts"):
		return fmt.Errorf("%s: the server's SSH host key cannot be verified (no known_hosts in the pod); set insecureIgnoreHostKey: true, or use an https repo: %w", where, err)
	case isUnreachable(err):
		return fmt.Errorf("%s: the git server did not answer; is it up and reachable from the pod (host, port, network policy)? %w", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}
