package main

import (
	"bytes"
	"path"

	"github.com/seedkeeper/seedkeeper/agent"
	"github.com/seedkeeper/seedkeeper/agent/report"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// metricsFile is the file seedkeeper watch keeps in metrics.textfile_dir.
const metricsFile = "seedkeeper.prom"

// metricsWriter returns what keeps the metrics textfile current for the
// watch (agent.WatchOptions.Recorded): it writes "status --format
// prometheus" into metrics.textfile_dir, atomically (node_exporter reads
// only *.prom files; the temporary file's name does not end so), and only
// when it changed. nil when no directory is configured. A failure is
// logged once until a write works again.
func metricsWriter(e agent.Env) func() {
	dir := e.Config.Metrics.TextfileDir
	if dir == "" {
		return nil
	}
	p := path.Join(dir, metricsFile)
	failing := false
	return func() {
		var b bytes.Buffer
		rep, err := report.Read(e)
		if err == nil {
			err = rep.WritePrometheus(&b)
		}
		if err == nil {
			err = fsutil.WriteFileIn(string(e.Root), p, b.Bytes(), 0o644)
		}
		switch {
		case err != nil && !failing:
			e.Log.Warn("watch: writing the metrics textfile", "file", e.Root.Path(p), "err", err)
		case err == nil && failing:
			e.Log.Info("watch: writing the metrics textfile works again", "file", e.Root.Path(p))
		}
		failing = err != nil
	}
}
