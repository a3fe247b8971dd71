package bench

import (
	"fmt"
	"strings"
)

// Row counts the outcomes of the runs of one case of the fault matrix
// against one client or reader.
type Row struct {
	Area   string // "mdata", "seed" or "netcfg"
	Case   string // the fault or input, e.g. "stale-frame", "iso flip x4"
	Client string // "library", "mdata-get", or the reader or parser name
	Runs   int

	Correct    int // the right value (or, for parsers, a clean accept)
	CorrectErr int // the right error: NOTFOUND for a missing key, a timeout for a fault that never clears, a clean parse error
	Failed     int // an error where an answer was due (counted, not a defect in itself)
	Wrong      int // a wrong value: must be 0
	Hangs      int // no return by the deadline plus the grace margin: must be 0
	Panics     int // must be 0
	Recovered  int // of CorrectErr, errors that were a panic the reader recovered from

	Time  Sample   // how long each run took
	Notes []string // the first few unexpected outcomes, for the report
}

// Bad reports whether r counts a wrong value, a hang or a panic.
func (r *Row) Bad() bool { return r.Wrong > 0 || r.Hangs > 0 || r.Panics > 0 }

func (r *Row) note(format string, args ...any) {
	if len(r.Notes) < 3 {
		r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	}
}

func (r *Row) String() string {
	return fmt.Sprintf("%s/%s/%s: runs %d correct %d correct-err %d (recovered panics %d) other %d wrong %d hangs %d panics %d median %s",
		r.Area, r.Case, r.Client, r.Runs, r.Correct, r.CorrectErr, r.Recovered, r.Failed, r.Wrong, r.Hangs, r.Panics, Ms(r.Time.Median()))
}

// MatrixMarkdown renders rows as a Markdown table, with a line of notes
// under it for the rows that have any.
func MatrixMarkdown(rows []*Row) string {
	var b strings.Builder
	b.WriteString("| area | case | client | runs | correct | correct error | other | wrong | hangs | panics | median | p90 |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var notes []string
	for _, r := range rows {
		cerr := fmt.Sprint(r.CorrectErr)
		if r.Recovered > 0 {
			cerr += fmt.Sprintf(" (%d recovered panics)", r.Recovered)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s | %d | %s | %s | %s | %s | %s |\n",
			r.Area, r.Case, r.Client, r.Runs, r.Correct, cerr, r.Failed,
			flag(r.Wrong), flag(r.Hangs), flag(r.Panics), Ms(r.Time.Median()), Ms(r.Time.P90()))
		for _, n := range r.Notes {
			notes = append(notes, fmt.Sprintf("- %s / %s / %s: %s", r.Area, r.Case, r.Client, oneLine(n)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nUnexpected outcomes (first few per row):\n\n")
		b.WriteString(strings.Join(notes, "\n"))
		b.WriteString("\n")
	}
	return b.String()
}

// flag shows a count that must be zero, in bold when it is not.
func flag(n int) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d**", n)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}
