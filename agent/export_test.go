package agent

import (
	"testing"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/sourceduty"
)

// SetToolBudget shortens the one budget of every VMware tool call of a
// boot's duties (info-set calls and the reports to vCenter alike) for
// the test, so that a tool that hangs costs the test little.
func SetToolBudget(t testing.TB, d time.Duration) {
	old := sourceduty.ToolBudget.Swap(int64(d))
	t.Cleanup(func() { sourceduty.ToolBudget.Store(old) })
}
