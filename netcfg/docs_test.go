package netcfg

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestCitedDocsExist: a comment that sends the reader to a document under
// docs/ names one the repository has.
func TestCitedDocsExist(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	cite := regexp.MustCompile(`docs/[A-Za-z0-9_-]+\.md`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range cite.FindAllString(string(b), -1) {
			if _, err := os.Stat(filepath.Join("..", doc)); err != nil {
				t.Errorf("%s cites %s, which is not in the repository", f, doc)
			}
		}
	}
}
