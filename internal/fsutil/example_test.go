package fsutil_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

func ExampleReadFile() {
	// A device is refused at once instead of being read without end.
	_, err := fsutil.ReadFile(context.Background(), "/dev/zero", fsutil.SmallFile)
	fmt.Println(errors.Is(err, fsutil.ErrNotRegular))
	// Output: true
}
