package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/redact"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

const collectLogsHelp = `Usage: seedkeeper collect-logs [--output FILE] [--root DIR] [--include-secrets]

Writes one gzip-compressed tar file for a bug report, as "cloud-init
collect-logs" does: seedkeeper's status (status.json and what "seedkeeper
status --json" prints), identity pin, network receipt and sealed marker,
the watch record of this boot, the journal of seedkeeper-boot and
seedkeeper-watch in this boot (when journalctl is there and the system is
the running one), the network files seedkeeper wrote (those that still
carry its header, in each stack's directories), and cloud-init's logs.
MANIFEST in the tar file lists every file taken, and every one not taken
and why. The metadata and the seed (user-data, passwords) are never taken.

Secrets are redacted unless --include-secrets: in JSON files every value
of a password-like key and every URL's credentials and query (as "seedkeeper
fetch" shows them), in text files the same keys' values on a line and
every URL's credentials and query.

Every file is read under --root through the bounded reader that follows
no link out of the root.

Options:
  --output FILE       the tar file to write (default
                      seedkeeper-logs.tar.gz; - for stdout); written 0600
  --root DIR          collect from the system under DIR instead of /
  --include-secrets   leave secrets in (the file is then as sensitive as
                      the machine's state)

Exit status: 0 written (also when some files were missing), 2 error,
3 usage.
`

// collectLimit bounds each file taken (a log's last part is kept).
const collectLimit = 8 << 20

// collectFiles are the files collect-logs takes, by system path, and
// whether each is JSON (redacted as a value) or text (line by line).
var collectFiles = []struct {
	path string
	json bool
}{
	{paths.Status, true},
	{paths.Identity, true},
	{paths.Receipt, true},
	{paths.Sealed, true},
	{agent.WatchRecordPath, true},
	{"/var/log/cloud-init.log", false},
	{"/var/log/cloud-init-output.log", false},
}

func runCollectLogs(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("collect-logs")
	output := fs.String("output", "seedkeeper-logs.tar.gz", "")
	root := fs.String("root", "", "")
	secrets := fs.Bool("include-secrets", false, "")
	if code, ok := parseFlags(fs, args, collectLogsHelp, stdout, stderr); !ok {
		return code
	}
	r := sysroot.Root(*root)
	var buf bytes.Buffer
	if err := collectLogs(&buf, r, *secrets); err != nil {
		fmt.Fprintf(stderr, "seedkeeper collect-logs: %v\n", err)
		return exitError
	}
	if *output == "-" {
		stdout.Write(buf.Bytes())
		return exitOK
	}
	if err := os.WriteFile(*output, buf.Bytes(), 0o600); err != nil {
		fmt.Fprintf(stderr, "seedkeeper collect-logs: %v\n", err)
		return exitError
	}
	// WriteFile keeps the mode of a file that was there.
	os.Chmod(*output, 0o600)
	fmt.Fprintf(stderr, "seedkeeper collect-logs: wrote %s\n", clean(*output))
	return exitOK
}

// collectLogs writes the tar.gz of what collect-logs takes from r.
func collectLogs(w io.Writer, r sysroot.Root, secrets bool) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now()
	var manifest []string
	add := func(name string, data []byte) error {
		manifest = append(manifest, "taken   "+name)
		return writeTarFile(tw, name, data, now)
	}
	skip := func(name string, why error) {
		manifest = append(manifest, fmt.Sprintf("missing %s: %v", name, why))
	}
	take := func(p string, isJSON bool) error {
		b, err := fsutil.ReadFileIn(context.Background(), string(r), p, collectLimit)
		if errors.Is(err, fsutil.ErrTooLarge) {
			manifest = append(manifest, fmt.Sprintf("note    %s: larger than %d bytes; not taken", p, collectLimit))
			return nil
		}
		if err != nil {
			skip(p, err)
			return nil
		}
		if !secrets {
			b = redactFile(b, isJSON)
		}
		return add(strings.TrimPrefix(p, "/"), b)
	}
	for _, f := range collectFiles {
		if err := take(f.path, f.json); err != nil {
			return err
		}
	}
	// What status says, as --json, for a reader without the tools.
	var st bytes.Buffer
	statusArgs := []string{"--json"}
	if !r.IsReal() {
		statusArgs = append(statusArgs, "--root", string(r))
	}
	runStatus(statusArgs, &st, io.Discard)
	b := st.Bytes()
	if !secrets {
		b = redactFile(b, true)
	}
	if err := add("status.json", b); err != nil {
		return err
	}
	// The network files seedkeeper wrote, in each stack's places.
	for _, s := range netcfg.Stacks {
		places, err := stacks.Of(s.Name).Places(string(r))
		if err != nil {
			skip(s.Name+" files", err)
			continue
		}
		for _, pl := range places {
			found, err := stacks.Walk(string(r), pl)
			if err != nil {
				skip(pl.Dir, err)
				continue
			}
			for _, f := range found {
				if !f.Ours {
					continue
				}
				data, err := fsutil.ReadFileInNoFollow(context.Background(), string(r), f.Path, collectLimit)
				if err != nil {
					continue
				}
				if !secrets {
					data = redactFile(data, false)
				}
				if err := add("network"+f.Path, data); err != nil {
					return err
				}
			}
		}
	}
	// The units' journal of this boot.
	if j, err := unitJournal(r); err != nil {
		skip("journal.txt", err)
	} else {
		if !secrets {
			j = redactFile(j, false)
		}
		if err := add("journal.txt", j); err != nil {
			return err
		}
	}
	if secrets {
		manifest = append(manifest, "note    secrets were left in (--include-secrets)")
	} else {
		manifest = append(manifest, "note    secrets redacted: password-like keys' values, URLs' credentials and queries")
	}
	if err := writeTarFile(tw, "MANIFEST", []byte(strings.Join(manifest, "\n")+"\n"), now); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeTarFile(tw *tar.Writer, name string, data []byte, mod time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Name: "seedkeeper-logs/" + name, Mode: 0o600, Size: int64(len(data)), ModTime: mod, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// unitJournal is journalctl's record of seedkeeper's units in this boot,
// for the running system only: an image under --root has no running
// journal.
func unitJournal(r sysroot.Root) ([]byte, error) {
	if !r.IsReal() {
		return nil, errors.New("not read for an image under --root")
	}
	if _, err := exec.LookPath("journalctl"); err != nil {
		return nil, errors.New("no journalctl here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "journalctl", "--no-pager", "-o", "short-iso", "-b",
		"-u", "seedkeeper-boot.service", "-u", "seedkeeper-watch.service")
	var out bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, n: collectLimit}
	if err := cmd.Run(); err != nil && out.Len() == 0 {
		return nil, fmt.Errorf("journalctl: %w", err)
	}
	return out.Bytes(), nil
}

// limitedWriter keeps the first n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	keep := p[:min(len(p), max(l.n, 0))]
	l.n -= len(keep)
	l.w.Write(keep)
	return len(p), nil
}

var (
	// urlText is a URL in a line of text.
	urlText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)
	// secretSetting is a password-like key and its value on a line:
	// "password: x", "token=x", "\"secret\": \"x\"".
	secretSetting = regexp.MustCompile(`(?i)("?[A-Za-z0-9_.-]*(?:pass|secret|token|_pw|private|credential)[A-Za-z0-9_.-]*"?\s*[:=]\s*)("[^"]*"|'[^']*'|\S+)`)
)

// redactFile hides the secrets of a file taken: a JSON file as a value
// (redact.Value, the one redaction of "seedkeeper fetch"), text line by
// line. A JSON file that does not decode is redacted as text.
func redactFile(b []byte, isJSON bool) []byte {
	if isJSON {
		var v any
		if json.Unmarshal(b, &v) == nil {
			if out, err := json.MarshalIndent(redact.Value(v, json.Marshal), "", "  "); err == nil {
				return append(out, '\n')
			}
		}
	}
	s := urlText.ReplaceAllStringFunc(string(b), redact.URL)
	s = secretSetting.ReplaceAllString(s, "${1}REDACTED")
	return []byte(s)
}
