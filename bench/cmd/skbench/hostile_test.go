package main

import (
	"strings"
	"testing"
)

func TestHostileMarkdownOrderAndBudget(t *testing.T) {
	small := &hostileCase{name: "nocloud/small", steps: []hostileStep{{cmd: "fetch", rss: 9 * 1024}, {cmd: "boot", rss: 10 * 1024}}}
	big := &hostileCase{name: "config/big", steps: []hostileStep{{cmd: "boot", rss: 20 * 1024, exit: 2}}}
	md := hostileMarkdown([]*hostileCase{small, big}, 0)
	if i, j := strings.Index(md, "`config/big`"), strings.Index(md, "`nocloud/small`"); i < 0 || j < 0 || i > j {
		t.Errorf("the largest case is not first:\n%s", md)
	}
	if !strings.Contains(md, "| `config/big` | 20.0 MiB | – | 20.0 MiB, 0.00 s (exit 2) | – | – | – | – |") {
		t.Errorf("row of config/big:\n%s", md)
	}
	if !strings.Contains(md, "Every one of the 3 processes (2 cases) stayed under the 64 MiB budget; the largest peaked at 20.0 MiB.") {
		t.Errorf("no under-budget line:\n%s", md)
	}

	over := &hostileCase{name: "nocloud/huge", steps: []hostileStep{{cmd: "boot", rss: 64 * 1024}, {cmd: "second boot", rss: 1, bad: "crashed"}}}
	md = hostileMarkdown([]*hostileCase{small, over}, 0)
	if !strings.Contains(md, "**1 of the 4 processes reached the 64 MiB budget or could not be measured: nocloud/huge boot.**") {
		t.Errorf("the case at the budget is not called out:\n%s", md)
	}
	if !strings.Contains(md, "**64.0 MiB, 0.00 s (exit 0)**") || !strings.Contains(md, "**Crashed, overran or exited outside 0–4: nocloud/huge second boot.**") {
		t.Errorf("bold cell or crash line missing:\n%s", md)
	}
	if got := overBudget([]*hostileCase{small, big}); len(got) != 0 {
		t.Errorf("overBudget of cases under the budget: %q", got)
	}
	if got := overBudget([]*hostileCase{small, over}); strings.Join(got, ",") != "nocloud/huge boot,nocloud/huge second boot" {
		t.Errorf("overBudget = %q", got)
	}
}
