// Package journallog is the log handler for seedkeeper's commands when
// their stderr is the systemd journal's stream (JOURNAL_STREAM names it):
// each line is the text handler's, prefixed with its level's priority as
// journald reads it ("<4>" a warning), so that "journalctl -p warning"
// finds it while journald still attributes it to the unit and forwards it
// to the console. A terminal, a file or a pipe keeps the text handler.
package journallog
