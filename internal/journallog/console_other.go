//go:build !unix

package journallog

import "io"

// OpenConsole is nil where there is no /dev/console.
func OpenConsole() io.Writer { return nil }
