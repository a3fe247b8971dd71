package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

const completionHelp = `Usage: seedkeeper completion bash|zsh|fish

Prints the shell completion script of seedkeeper for bash, zsh or fish:
the commands, their subcommands and their options, as each command's
--help gives them. The packages install the scripts where each shell
looks for them; to try one by hand:

  source <(seedkeeper completion bash)
  seedkeeper completion fish | source

Exit status: 0, 3 usage.
`

func runCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, completionHelp)
		return exitOK
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, `seedkeeper completion: want one shell: bash, zsh or fish ("seedkeeper completion --help")`)
		return exitUsage
	}
	cmds := completionCommands()
	switch args[0] {
	case "bash":
		writeBash(stdout, cmds)
	case "zsh":
		writeZsh(stdout, cmds)
	case "fish":
		writeFish(stdout, cmds)
	default:
		fmt.Fprintln(stderr, `seedkeeper completion: unknown shell (want bash, zsh or fish)`)
		return exitUsage
	}
	return exitOK
}

// completable is what completion knows of one command.
type completable struct {
	name, summary string
	subs, flags   []string // "check", "--root"
}

var (
	// usageSub is a "seedkeeper CMD SUB[|SUB...]" line of a help's Usage.
	usageSub = regexp.MustCompile(`^(?:Usage:)?\s+seedkeeper [a-z-]+ ([a-z]+(?:\|[a-z]+)*)\b`)
	// longFlag is an option in a Usage line or at the start of an option
	// line.
	longFlag = regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	optLine  = regexp.MustCompile(`^\s+(?:-[a-z], )?(--[a-z][a-z0-9-]*)`)
)

// completionCommands reads every command of the table: its summary, and
// its subcommands and options from its own --help (the Usage lines and the
// option lines), so that what completes is what the command takes.
func completionCommands() []completable {
	table := commands()
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []completable
	for _, n := range names {
		c := completable{name: n, summary: table[n].summary}
		var help bytes.Buffer
		table[n].run([]string{"--help"}, &help, io.Discard)
		inUsage := true
		for _, line := range strings.Split(help.String(), "\n") {
			if line == "" {
				inUsage = false
			}
			if inUsage {
				if m := usageSub.FindStringSubmatch(line); m != nil {
					c.subs = append(c.subs, strings.Split(m[1], "|")...)
				}
				c.flags = append(c.flags, longFlag.FindAllString(line, -1)...)
			} else if m := optLine.FindStringSubmatch(line); m != nil {
				c.flags = append(c.flags, m[1])
			}
		}
		slices.Sort(c.flags)
		c.flags = slices.Compact(c.flags)
		c.subs = slices.Compact(c.subs)
		out = append(out, c)
	}
	return out
}

func names(cmds []completable) string {
	var n []string
	for _, c := range cmds {
		n = append(n, c.name)
	}
	return strings.Join(n, " ")
}

func writeBash(w io.Writer, cmds []completable) {
	fmt.Fprintf(w, `# bash completion for seedkeeper (made by "seedkeeper completion bash")
_seedkeeper() {
    local cur=${COMP_WORDS[COMP_CWORD]} subs="" flags=""
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "help %s" -- "$cur"))
        return
    fi
    case ${COMP_WORDS[1]} in
    help) [[ $COMP_CWORD -eq 2 ]] && COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;
`, names(cmds), names(cmds))
	for _, c := range cmds {
		fmt.Fprintf(w, "    %s) subs=%q flags=%q ;;\n", c.name, strings.Join(c.subs, " "), strings.Join(c.flags, " "))
	}
	fmt.Fprint(w, `    esac
    if [[ $COMP_CWORD -eq 2 && -n $subs && $cur != -* ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    fi
}
complete -o default -F _seedkeeper seedkeeper
`)
}

// zshQuote quotes s for a single-quoted zsh word.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeZsh(w io.Writer, cmds []completable) {
	fmt.Fprint(w, "#compdef seedkeeper\n# zsh completion for seedkeeper (made by \"seedkeeper completion zsh\")\nlocal -a cmds subs opts\ncmds=(\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %s\n", zshQuote(c.name+":"+strings.ReplaceAll(c.summary, ":", `\:`)))
	}
	fmt.Fprint(w, `  'help:print the help of seedkeeper or of a command'
)
if (( CURRENT == 2 )); then
  _describe -t commands 'seedkeeper command' cmds
  return
fi
case ${words[2]} in
`)
	fmt.Fprintf(w, "  help) (( CURRENT == 3 )) && compadd -- %s; return ;;\n", names(cmds))
	for _, c := range cmds {
		fmt.Fprintf(w, "  %s) subs=(%s) opts=(%s) ;;\n", c.name, strings.Join(c.subs, " "), strings.Join(c.flags, " "))
	}
	fmt.Fprint(w, `esac
if (( CURRENT == 3 && ${#subs} )) && [[ ${words[CURRENT]} != -* ]]; then
  compadd -a subs
elif [[ ${words[CURRENT]} == -* ]]; then
  compadd -a opts
else
  _files
fi
`)
}

// fishQuote quotes s for a single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, cmds []completable) {
	fmt.Fprintf(w, "# fish completion for seedkeeper (made by \"seedkeeper completion fish\")\n")
	fmt.Fprintf(w, "complete -c seedkeeper -n __fish_use_subcommand -f -a help -d %s\n", fishQuote("print the help of seedkeeper or of a command"))
	fmt.Fprintf(w, "complete -c seedkeeper -n '__fish_seen_subcommand_from help' -f -a %s\n", fishQuote(names(cmds)))
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c seedkeeper -n __fish_use_subcommand -f -a %s -d %s\n", c.name, fishQuote(c.summary))
		if len(c.subs) > 0 {
			fmt.Fprintf(w, "complete -c seedkeeper -n '__fish_seen_subcommand_from %s; and not __fish_seen_subcommand_from %s' -f -a %s\n",
				c.name, strings.Join(c.subs, " "), fishQuote(strings.Join(c.subs, " ")))
		}
		for _, f := range c.flags {
			fmt.Fprintf(w, "complete -c seedkeeper -n '__fish_seen_subcommand_from %s' -l %s\n", c.name, strings.TrimPrefix(f, "--"))
		}
	}
}
