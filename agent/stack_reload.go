package agent

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/netcfg"
)

// reloadStack asks the running network stack to read the files just
// written, by the steps the stack names (netcfg.Stack.Reload): a D-Bus
// call, or commands run without a shell. A stack that is not running yet
// reads the files when it starts. It reports whether every step was
// taken and succeeded.
func (e *Env) reloadStack(ctx context.Context, sf *netcfg.StackFiles) bool {
	if sf == nil || sf.Stack == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r := sf.Stack.Reload(e.Root.Path("/"), sf)
	if len(r.Steps) == 0 {
		e.Log.Info("network: " + r.Note)
		return false
	}
	ok := true
	for _, st := range r.Steps {
		var err error
		var out []byte
		if st.Bus != nil {
			err = callSystemBus(ctx, *st.Bus)
		} else {
			out, err = exec.CommandContext(ctx, st.Command[0], st.Command[1:]...).CombinedOutput()
		}
		if err != nil {
			e.Log.Warn("network: asking "+sf.Stack.Title+" to reload failed", "step", st.String(), "err", err, "output", strings.TrimSpace(string(out)))
			ok = false
			continue
		}
		e.Log.Info("network: " + sf.Stack.Title + ": " + st.String())
	}
	return ok
}
