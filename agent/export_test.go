package agent

import (
	"testing"
	"time"
)

// SetGuestinfoSetBudget shortens the bound of a boot's info-set calls for
// the test, so that a tool that hangs costs the test little.
func SetGuestinfoSetBudget(t testing.TB, d time.Duration) {
	old := guestinfoSetBudget.Swap(int64(d))
	t.Cleanup(func() { guestinfoSetBudget.Store(old) })
}
