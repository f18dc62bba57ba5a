// Package cli holds what the argoexec and argoexec-step command trees
// share: telling usage errors from failures, running a cobra root so that
// happens in one place, and building the one logger a command logs through.
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// UsageError marks errors in flags, environment or input files, found before
// any work was done. Commands map it to their usage exit code.
type UsageError struct{ Err error }

// Error implements error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// runError carries an error returned by a command's RunE through cobra, so
// that Execute can tell it from cobra's own flag and command errors.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// RunE marks err as the command's own, for a cobra RunE to return.
func RunE(err error) error {
	if err == nil {
		return nil
	}
	return &runError{err: err}
}

// Execute runs root with args, prints a failure as "NAME: error" on stderr
// (a JSON log line with --log-format json), and returns it: the command's own error as it returned it (through RunE),
// anything cobra rejected (flags, unknown commands) as a UsageError.
func Execute(root *cobra.Command, args []string, stdout, stderr io.Writer) error {
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SilenceErrors, root.SilenceUsage = true, true
	err := root.Execute()
	if err == nil {
		return nil
	}
	var re *runError
	if errors.As(err, &re) {
		err = re.err
	} else {
		err = &UsageError{Err: err}
	}
	printError(root, stderr, err)
	return err
}

// printError prints the final error as "NAME: error", or, under
// --log-format json, as one JSON log line like every other line of the
// command's log, so that a log collector parses it too.
func printError(root *cobra.Command, stderr io.Writer, err error) {
	if f := root.PersistentFlags().Lookup("log-format"); f == nil || f.Value.String() != "json" {
		fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
		return
	}
	l := logrus.New()
	l.SetOutput(stderr)
	l.SetFormatter(&logrus.JSONFormatter{})
	l.WithField("cmd", root.Name()).Error(err.Error())
}

// LogOptions are the --loglevel and --log-format flags.
type LogOptions struct {
	Level  string
	Format string
}

// AddFlags registers the flags on fs.
func (o *LogOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Level, "loglevel", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.Format, "log-format", "text", "log format: text or json")
}

// Logger builds the logger the flags describe, writing to w. Bad values are
// UsageErrors naming the flag.
func (o *LogOptions) Logger(w io.Writer) (*logrus.Logger, error) {
	level, err := logrus.ParseLevel(o.Level)
	if err != nil {
		return nil, Usagef("--loglevel: %w", err)
	}
	l := logrus.New()
	l.SetOutput(w)
	l.SetLevel(level)
	switch o.Format {
	case "text":
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	case "json":
		l.SetFormatter(&logrus.JSONFormatter{})
	default:
		return nil, Usagef("--log-format: %q is not a format (want text or json)", o.Format)
	}
	return l, nil
}

// AddVersion gives root a `version` command and a --version flag, both
// printing "NAME LINE" to out (LINE: version, commit and Go version). It
// leaves cobra's Version field unset on purpose: cobra prints that through
// a text/template, and a binary that can run a template keeps every
// exported method of every type it links (the linker can no longer drop
// them): argoexec was 6.5 MB larger with it, and wait touched 4 MiB more
// of its file-backed memory.
func AddVersion(root *cobra.Command, out io.Writer, line string) {
	show := false
	root.Flags().BoolVar(&show, "version", false, "print the version, commit and Go version of this build (as the version command)")
	printVersion := func() error {
		_, err := fmt.Fprintln(out, root.Name(), line)
		return RunE(err)
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if show {
			return printVersion()
		}
		return cmd.Help()
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this build",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return printVersion() },
	})
}
