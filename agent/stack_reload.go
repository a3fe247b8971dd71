package agent

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// reloadStack asks the running network stack to read the files just
// written, by the steps the stack names (stacks.Duties.Reload): a D-Bus
// call, or commands run without a shell. A stack that is not running yet
// reads the files when it starts. It reports whether every step was
// taken and succeeded.
func (e *Env) reloadStack(ctx context.Context, sf *netcfg.StackFiles) bool {
	if sf == nil || sf.Stack == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r := stacks.Of(sf.Stack.Name).Reload(e.Root.Path("/"), sf.Files)
	if len(r.Steps) == 0 {
		e.Log.Info("network: " + r.Note)
		return false
	}
	ok := true
	for _, st := range r.Steps {
		var err error
		out := &excerpt{max: maxReloadOutput}
		if st.Bus != nil {
			err = callSystemBus(ctx, *st.Bus)
		} else {
			cmd := exec.CommandContext(ctx, st.Command[0], st.Command[1:]...)
			cmd.Stdout, cmd.Stderr = out, out
			err = cmd.Run()
		}
		if err != nil {
			e.Log.Warn("network: asking "+sf.Stack.Title+" to reload failed", "step", st.String(), "err", err, "output", out.String())
			ok = false
			continue
		}
		e.Log.Info("network: " + sf.Stack.Title + ": " + st.String())
	}
	return ok
}

// maxReloadOutput is how much of a reload command's output reaches the
// log: it is another program's text, of any length.
const maxReloadOutput = 512

// excerpt keeps the first max bytes written to it and counts the rest.
type excerpt struct {
	b    []byte
	max  int
	more int
}

func (x *excerpt) Write(p []byte) (int, error) {
	n := min(len(p), x.max-len(x.b))
	x.b = append(x.b, p[:n]...)
	x.more += len(p) - n
	return len(p), nil
}

// String is the excerpt (a character it cut in two, or any invalid UTF-8,
// shown as "?") and how much more there was.
func (x *excerpt) String() string {
	s := strings.TrimSpace(string(bytes.ToValidUTF8(x.b, []byte("?"))))
	if x.more > 0 {
		s += fmt.Sprintf("... (%d more bytes)", x.more)
	}
	return s
}
