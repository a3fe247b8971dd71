package image

import (
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// FuzzParseCloudConfig: any bytes give a mapping or an error that quotes
// nothing from the input.
func FuzzParseCloudConfig(f *testing.F) {
	for _, s := range []string{
		"datasource_list: [NoCloud, None]\nnetwork: {config: disabled}\n",
		"datasource:\n  NoCloud:\n    fs_label: null\n",
		"- a\n", "", "~\n", "a: [b\n", "a: &x [*x]\n", "merge_how: 'dict(replace)'\n",
		"a: &a [b, b]\nc: &c [*a, *a]\nd: [*c, *c, *c]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseCloudConfig(data, yamlx.NewBudget())
		if err != nil {
			if doc != nil {
				t.Fatal("a document and an error")
			}
			msg := err.Error()
			for _, w := range strings.Fields(string(data)) {
				if len(w) >= 12 && strings.Contains(msg, w) {
					t.Fatalf("error %q quotes the input", msg)
				}
			}
			return
		}
		cc := cloudConfig{{Path: "/x.cfg", Doc: doc}}
		cc.lookup("network", "config")
		cc.logFiles()
		cc.customMerge()
	})
}
