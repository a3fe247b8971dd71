package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/mdata"
)

// The host's FAILURE message reached the terminal with
// its escape sequences ("\x1b]0;...\a" retitles it, "\x1b[2J" clears it).
func TestMdataHostMessagesAreEscaped(t *testing.T) {
	hostile := "Cannot\x1b]0;owned\a update\x1b[2J \u202etxt"
	for _, tool := range []string{"get", "put", "delete", "list"} {
		for _, err := range []error{
			&mdata.OpError{Op: tool, Key: "k", Err: &mdata.HostError{Code: "FAILURE", Message: hostile}},
			&mdata.OpError{Op: tool, Key: "k", Err: fmt.Errorf("%w: %s", mdata.ErrUnavailable, hostile)},
			&mdata.OpError{Op: tool, Key: "k", Err: fmt.Errorf("odd reply %s", hostile)},
		} {
			var b bytes.Buffer
			reportMdataError(&b, tool, "k", err)
			out := b.String()
			if strings.ContainsAny(out, "\x1b\a\u202e") {
				t.Errorf("%s: %q", tool, out)
			}
			if !strings.Contains(out, `\x1b]0;owned\x07`) {
				t.Errorf("%s: the message is not shown escaped: %q", tool, out)
			}
		}
	}
}
