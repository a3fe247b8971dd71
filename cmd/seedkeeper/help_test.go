package main

import (
	"strings"
	"testing"
)

// "seedkeeper help status" printed the top-level help. For every command
// of the table, "help CMD" and "CMD --help" print the same text to stdout
// and exit 0; so do -h and, for the commands with subcommands, "CMD help".
func TestHelpAgrees(t *testing.T) {
	for name := range commands() {
		want := runInProcess(name, "--help")
		if want.code != exitOK || want.stdout == "" || want.stderr != "" {
			t.Errorf("%s --help: %v", name, want)
			continue
		}
		for _, args := range [][]string{{"help", name}, {name, "-h"}} {
			if r := runInProcess(args...); r != want {
				t.Errorf("%q: %v\nwant what %s --help printed", args, r, name)
			}
		}
	}
	for _, args := range [][]string{{"mdata", "--help"}, {"mdata", "help"}, {"mdata", "-h"}, {"help", "mdata"}} {
		if r := runInProcess(args...); r.code != exitOK || !strings.HasPrefix(r.stdout, "Usage: seedkeeper mdata get|put|delete|list") || r.stderr != "" {
			t.Errorf("%q: %v", args, r)
		}
	}
	if r := runInProcess("help"); r.code != exitOK || !strings.Contains(r.stdout, "Commands:\n") {
		t.Errorf("help: %v", r)
	}
}

// A mistyped command or flag is one line: what is wrong, what was
// probably meant, where the list is.
func TestMistypedOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"statsu"}, `seedkeeper: unknown command "statsu"; did you mean status? ("seedkeeper --help" lists the commands)`},
		{[]string{"help", "nosuch"}, `seedkeeper: unknown command "nosuch" ("seedkeeper --help" lists the commands)`},
		{[]string{"status", "--jsn"}, `seedkeeper status: flag provided but not defined: -jsn; did you mean --json? ("seedkeeper status --help" lists the options)`},
		{[]string{"status", "--wai"}, `seedkeeper status: flag provided but not defined: -wai; did you mean --wait? ("seedkeeper status --help" lists the options)`},
		{[]string{"boot", "--netwrk", "plan"}, `seedkeeper boot: flag provided but not defined: -netwrk; did you mean --network? ("seedkeeper boot --help" lists the options)`},
		{[]string{"image", "check", "--jsn"}, `seedkeeper image check: flag provided but not defined: -jsn; did you mean --json? ("seedkeeper image check --help" lists the options)`},
		{[]string{"version", "extra"}, `seedkeeper version: unexpected argument "extra" ("seedkeeper version --help" lists the options)`},
		{[]string{"identity", "show", "extra"}, `seedkeeper identity show: unexpected argument "extra" ("seedkeeper identity show --help" lists the options)`},
	} {
		r := runInProcess(c.args...)
		if r.code != exitUsage || r.stdout != "" || r.stderr != c.want+"\n" {
			t.Errorf("%q: %v\nwant %q", c.args, r, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"json", "json", 0}, {"jsn", "json", 1}, {"statsu", "status", 2}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
