package fsutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// SameFileIn reports whether the system path p under root is a regular
// file holding exactly data, opened as ReadFileInNoFollow opens it (inside
// the root, never through a link, never a FIFO or a device). It compares as it reads, 64 KiB at a time, so a file
// of many MiB is never held beside the data it is compared with; a file
// whose size is not len(data) is not read at all.
func SameFileIn(ctx context.Context, root, p string, data []byte) (bool, error) {
	f, err := OpenIn(root, p, Regular|NoFollow)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if fi.Size() != int64(len(data)) {
		return false, nil
	}
	buf := make([]byte, 64<<10)
	for off := 0; ; {
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("reading %s: %w", p, err)
		}
		n, err := f.Read(buf)
		if n > len(data)-off || !bytes.Equal(buf[:n], data[off:off+n]) {
			return false, nil
		}
		off += n
		if errors.Is(err, io.EOF) {
			return off == len(data), nil
		}
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", p, err)
		}
	}
}
