// Package journallog is the log handler for seedkeeper's commands when
// their stderr is the systemd journal (JOURNAL_STREAM names it): each
// record goes to journald over its native socket (go-systemd's journal
// package) at its level's priority, with its attributes as fields named
// SEEDKEEPER_<KEY>, so that "journalctl -p warning" and "journalctl
// SEEDKEEPER_NIC=eth1" find them. The console and a terminal keep the
// text handler.
package journallog
