package fsutil

import (
	"context"
	"errors"
	"fmt"
)

// ErrOverBudget is returned when a read would take a set of files past
// its aggregate bound (Budget).
var ErrOverBudget = errors.New("over the aggregate bound")

// A Budget is the aggregate bound on what one command reads from a set of
// files of an image (cloud.cfg and all of cloud.cfg.d, say), beside each
// file's own bound: a directory of many files, each within its own
// limit, cannot add up to more than the budget. The zero Budget allows
// nothing; it is not safe for concurrent use.
type Budget struct {
	what            string
	bytes, maxBytes int64
	files, maxFiles int
}

// NewBudget returns a budget of bytes and files for the set named what
// (in errors: "cloud-init's configuration").
func NewBudget(what string, bytes int64, files int) *Budget {
	return &Budget{what: what, bytes: bytes, maxBytes: bytes, files: files, maxFiles: files}
}

// The aggregate bound of one set of configuration files of an image, read
// together by one command (cloud.cfg and all of cloud.cfg.d, netplan's
// directories, sshd_config.d, /etc/default/grub.d), beside each file's own
// bound (SmallFile).
const (
	ConfigSetTotal = 4 << 20
	ConfigSetFiles = 512
)

// ConfigBudget is a new budget for reading the set of configuration files
// named what once.
func ConfigBudget(what string) *Budget {
	return NewBudget(what, ConfigSetTotal, ConfigSetFiles)
}

// CloudConfigBudget is ConfigBudget for cloud-init's configuration.
func CloudConfigBudget() *Budget {
	return ConfigBudget("cloud-init's configuration (cloud.cfg and cloud.cfg.d together)")
}

// ReadFileIn reads p under root as ReadFileIn does, within limit and
// within what is left of the budget, which it then counts. A file that
// no longer fits is an error naming p, the set and the bound
// (ErrOverBudget), and reads nothing past what is left.
func (b *Budget) ReadFileIn(ctx context.Context, root, p string, limit int64) ([]byte, error) {
	if b.files <= 0 {
		return nil, fmt.Errorf("reading %s: %w of %s: more than %d files", p, ErrOverBudget, b.what, b.maxFiles)
	}
	short := b.bytes < limit
	data, err := ReadFileIn(ctx, root, p, min(limit, b.bytes))
	if short && errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("reading %s: %w of %s: more than %d bytes", p, ErrOverBudget, b.what, b.maxBytes)
	}
	if err != nil {
		return nil, err
	}
	b.bytes -= int64(len(data))
	b.files--
	return data, nil
}
