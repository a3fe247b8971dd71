package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// dottedKeys lists the dotted keys of the yaml-tagged fields of t.
func dottedKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == "" {
			keys = append(keys, dottedKeys(f.Type, prefix+tag+".")...)
			continue
		}
		keys = append(keys, prefix+tag)
	}
	return keys
}

// Every key of Config is in Reference, and nothing else is: the README,
// seedkeeper-config(5) and the file Load takes cannot disagree.
func TestReferenceHasEveryKey(t *testing.T) {
	var inRef []string
	section := ""
	for _, line := range strings.Split(Reference, "\n") {
		m := regexp.MustCompile(`^(\s*)([a-z_]+):`).FindStringSubmatch(line)
		switch {
		case m == nil:
		case m[1] == "" && strings.TrimSpace(strings.SplitN(line, "#", 2)[0]) == m[2]+":":
			section = m[2] + "."
		case m[1] == "":
			section = ""
			inRef = append(inRef, m[2])
		default:
			inRef = append(inRef, section+m[2])
		}
	}
	want := dottedKeys(reflect.TypeFor[Config](), "")
	if strings.Join(inRef, " ") != strings.Join(want, " ") {
		t.Errorf("Reference has the keys %q\nConfig has %q", inRef, want)
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(Reference), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, sources); err != nil {
		t.Errorf("Load(Reference): %v", err)
	}
}

func TestReadmeHasReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "```yaml\n"+Reference+"```\n") {
		t.Errorf("README.md's Configuration block is not config.Reference")
	}
}
