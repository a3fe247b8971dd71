// Package journallog is the log handler for seedkeeper's commands when
// their stderr is the systemd journal's stream (JOURNAL_STREAM names it).
// A service running as root sends each record to the journal's socket
// (NewJournalHandler): its priority, its attributes as fields and its
// unit as OBJECT_SYSTEMD_UNIT, which "journalctl -u" matches after a
// short-lived process has exited. Otherwise each line is the text
// handler's on the stream, prefixed with its level's priority as
// journald reads it ("<4>" a warning; NewStreamHandler). A terminal, a
// file or a pipe keeps the text handler.
package journallog
