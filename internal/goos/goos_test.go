package goos

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
)

func TestUnsupported(t *testing.T) {
	err := fmt.Errorf("hotplug: %w", Unsupported("watching links"))
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("%v does not wrap errors.ErrUnsupported", err)
	}
	if want := "hotplug: watching links is not supported on " + runtime.GOOS; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}
