package journallog

import (
	"os"
	"strconv"
	"strings"
)

// EnvStream is the variable systemd sets for a service whose stdout or
// stderr is connected to the journal: "DEVICE:INODE" of that stream.
const EnvStream = "JOURNAL_STREAM"

// IsStream reports whether f is the stream EnvStream names: the journal
// is reading what is written to it. A JOURNAL_STREAM that is not
// "DEVICE:INODE" in decimal names no stream.
func IsStream(f *os.File) bool {
	dev, ino, ok := parseStream(os.Getenv(EnvStream))
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	d, i, ok := devIno(fi)
	return ok && d == dev && i == ino
}

func parseStream(s string) (dev, ino uint64, ok bool) {
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	dev, err1 := strconv.ParseUint(a, 10, 64)
	ino, err2 := strconv.ParseUint(b, 10, 64)
	return dev, ino, err1 == nil && err2 == nil
}
