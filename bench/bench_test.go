package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSampleQuantiles(t *testing.T) {
	var s Sample
	if s.Median() != 0 {
		t.Errorf("empty median = %v", s.Median())
	}
	for i := 10; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	if got := s.Median(); got != 5*time.Millisecond {
		t.Errorf("median = %v, want 5ms", got)
	}
	if got := s.P90(); got != 9*time.Millisecond {
		t.Errorf("p90 = %v, want 9ms", got)
	}
	if s[0] != 10*time.Millisecond {
		t.Error("Quantile sorted the sample in place")
	}
	if got := Ratio(2*time.Millisecond, 7*time.Millisecond); got != "3.5×" {
		t.Errorf("Ratio = %q", got)
	}
	if got := Ratio(0, time.Second); got != "–" {
		t.Errorf("Ratio with zero = %q", got)
	}
}

func TestUpdateSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "B.md")
	if err := UpdateSection(path, "a", "first A"); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSection(path, "b", "B"); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSection(path, "a", "second A\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	want := pageHeader + "<!-- BEGIN a -->\nsecond A\n<!-- END a -->\n\n<!-- BEGIN b -->\nB\n<!-- END b -->\n"
	if got != want {
		t.Errorf("page:\n%s\nwant:\n%s", got, want)
	}
	os.WriteFile(path, []byte("x\n<!-- BEGIN a -->\nno end\n"), 0o644)
	if err := UpdateSection(path, "a", "A"); err == nil || !strings.Contains(err.Error(), "only one of its markers") {
		t.Errorf("half a section: err = %v", err)
	}
}

func TestMatrixMarkdownFlagsBadCounts(t *testing.T) {
	rows := []*Row{
		{Area: "mdata", Case: "ok", Client: "library", Runs: 2, Correct: 2},
		{Area: "mdata", Case: "bad | case", Client: "mdata-get", Runs: 2, Correct: 1, Wrong: 1, Notes: []string{"got 3 bytes"}},
	}
	md := MatrixMarkdown(rows)
	if !strings.Contains(md, "| **1** |") || !strings.Contains(md, "got 3 bytes") {
		t.Errorf("markdown does not flag the wrong value:\n%s", md)
	}
	if rows[0].Bad() || !rows[1].Bad() {
		t.Error("Bad() is wrong")
	}
}

func TestCLIOutput(t *testing.T) {
	for in, want := range map[string]string{"": "\n", "a": "a\n", "a\n": "a\n", "a\x00": "a\x00\n"} {
		if got := string(cliOutput([]byte(in))); got != want {
			t.Errorf("cliOutput(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMutateIsDeterministic(t *testing.T) {
	in := []byte("version: 2\nethernets: {eth0: {dhcp4: true}}\n")
	a := mutate(rand.New(rand.NewPCG(7, 7)), in)
	b := mutate(rand.New(rand.NewPCG(7, 7)), in)
	if string(a) != string(b) {
		t.Errorf("same seed, different mutants: %q %q", a, b)
	}
	if string(in) != "version: 2\nethernets: {eth0: {dhcp4: true}}\n" {
		t.Error("mutate changed its input")
	}
}

func TestReadCorpusEntry(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	os.WriteFile(p, []byte("go test fuzz v1\n[]byte(\"a\\x00\")\nstring(\"\\x82\")\n"), 0o644)
	vals, err := readCorpusEntry(p)
	if err != nil || len(vals) != 2 || string(vals[0]) != "a\x00" || string(vals[1]) != "\x82" {
		t.Errorf("readCorpusEntry = %q, %v", vals, err)
	}
	os.WriteFile(p, []byte("go test fuzz v1\nint(3)\n"), 0o644)
	if _, err := readCorpusEntry(p); err == nil {
		t.Error("an int value was accepted")
	}
}

func ExampleSample() {
	s := Sample{3 * time.Millisecond, 1 * time.Millisecond, 2 * time.Millisecond}
	fmt.Println(Ms(s.Median()), Ratio(s.Median(), 10*time.Millisecond))
	// Output: 2.00 ms 5.0×
}

func ExampleMatrixMarkdown() {
	r := &Row{Area: "mdata", Case: "stale-frame", Client: "library", Runs: 1, Correct: 1, Time: Sample{time.Millisecond}}
	fmt.Print(strings.Split(MatrixMarkdown([]*Row{r}), "\n")[2])
	// Output: | mdata | stale-frame | library | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 1.00 ms | 1.00 ms |
}
