package safetext_test

import (
	"fmt"

	"github.com/seedkeeper/seedkeeper/internal/safetext"
)

func ExampleEscape() {
	// An instance ID that would retitle the terminal.
	fmt.Println(safetext.Escape("i-123\x1b]0;owned\x07"))
	// Output: i-123\x1b]0;owned\x07
}
