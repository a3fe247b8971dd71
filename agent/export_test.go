package agent

import (
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
)

// SetGuestinfoSetBudget shortens the bound of a boot's info-set calls for
// the test, so that a tool that hangs costs the test little.
func SetGuestinfoSetBudget(t testing.TB, d time.Duration) {
	old := sourceduty.ToolBudget.Swap(int64(d))
	t.Cleanup(func() { sourceduty.ToolBudget.Store(old) })
}
