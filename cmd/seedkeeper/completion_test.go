package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The completion is made from the command table and each command's
// --help: every command completes, with its subcommands and options.
func TestCompletionFromTheTable(t *testing.T) {
	cmds := completionCommands()
	if len(cmds) != len(commands()) {
		t.Fatalf("%d commands complete, the table has %d", len(cmds), len(commands()))
	}
	byName := map[string]completable{}
	for _, c := range cmds {
		byName[c.name] = c
	}
	for name, want := range map[string]struct{ subs, flags []string }{
		"status": {nil, []string{"--format", "--json", "--root", "--timeout", "--wait"}},
		"image":  {[]string{"check", "seal"}, []string{"--dry-run", "--expect", "--json", "--keep-ssh-host-keys", "--root"}},
		"mdata":  {[]string{"get", "put", "delete", "list"}, nil},
		"watch":  {nil, []string{"--config", "--drivers", "--network", "--root"}},
	} {
		c := byName[name]
		if !slices.Equal(c.subs, want.subs) || !slices.Equal(c.flags, want.flags) {
			t.Errorf("%s: subs %q flags %q; want %q %q", name, c.subs, c.flags, want.subs, want.flags)
		}
	}
}

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	r := runInProcess("completion", shell)
	if r.code != exitOK || r.stderr != "" || r.stdout == "" {
		t.Fatalf("completion %s: %v", shell, r)
	}
	p := filepath.Join(t.TempDir(), "seedkeeper."+shell)
	if err := os.WriteFile(p, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// bash, asked as it asks when Tab is pressed, completes commands,
// subcommands and options.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := completionScript(t, "bash")
	for line, want := range map[string]string{
		"seedkeeper st":            "status",
		"seedkeeper image ":        "check seal",
		"seedkeeper status --w":    "--wait",
		"seedkeeper image seal --": "--dry-run --expect --json --keep-ssh-host-keys --root",
		"seedkeeper help sta":      "status",
		"seedkeeper c":             "collect-logs completion",
	} {
		words := strings.Split(line, " ")
		prog := `source "$1"; COMP_WORDS=(` + strings.Join(quoteAll(words), " ") + `); COMP_CWORD=` +
			strconv.Itoa(len(words)-1) + `; _seedkeeper; echo "${COMPREPLY[*]}"`
		out, err := exec.Command(bash, "-c", prog, "bash", script).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("%q: %q, %v; want %q", line, out, err, want)
		}
	}
}

// zsh and fish take their scripts; fish, asked for completions, gives
// the commands and options.
func TestCompletionZshFish(t *testing.T) {
	if zsh, err := exec.LookPath("zsh"); err != nil {
		t.Log("no zsh (scripts/test-deps.sh installs it): its script is not checked")
	} else if out, err := exec.Command(zsh, "-n", completionScript(t, "zsh")).CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v\n%s", err, out)
	}
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("no fish (scripts/test-deps.sh installs it)")
	}
	script := completionScript(t, "fish")
	for line, want := range map[string][]string{
		"seedkeeper sta":         {"status\tsay what the last boot decided, and why"},
		"seedkeeper status --wa": {"--wait"},
		"seedkeeper image ":      {"check", "seal"},
	} {
		out, err := exec.Command(fish, "--no-config", "-c", "source $argv[1]; complete -C $argv[2]", script, line).CombinedOutput()
		got := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %q, %v; want %q", line, got, err, want)
		}
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "'" + s + "'"
	}
	return out
}
