package packaging

import (
	"debug/elf"
	"debug/pe"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// crossTargets are the builds "make cross" makes: the whole binary on
// Linux; on FreeBSD and Windows the mdata tools over the serial port, with
// "not supported" errors for the commands that need Linux.
var crossTargets = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"}, {"freebsd", "amd64"}, {"windows", "amd64"},
}

// TestCrossBuild builds cmd/seedkeeper for every target with CGO_ENABLED=0
// and checks each output is an executable for that platform, statically
// linked (no program interpreter, no shared libraries) where it is ELF.
func TestCrossBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds take a while; run without -short")
	}
	t.Parallel()
	dir := t.TempDir()
	for _, tg := range crossTargets {
		t.Run(tg.goos+"-"+tg.goarch, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(dir, "seedkeeper-"+tg.goos+"-"+tg.goarch)
			cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/seedkeeper")
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+tg.goos, "GOARCH="+tg.goarch)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s GOARCH=%s go build ./cmd/seedkeeper: %v\n%s", tg.goos, tg.goarch, err, b)
			}
			if tg.goos == "windows" {
				f, err := pe.Open(out)
				if err != nil {
					t.Fatalf("%s: not a PE executable: %v", out, err)
				}
				defer f.Close()
				if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
					t.Errorf("PE machine %#x; want amd64", f.Machine)
				}
				return
			}
			f, err := elf.Open(out)
			if err != nil {
				t.Fatalf("%s: not an ELF executable: %v", out, err)
			}
			defer f.Close()
			wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[tg.goarch]
			if f.Machine != wantMachine {
				t.Errorf("ELF machine %v; want %v", f.Machine, wantMachine)
			}
			if tg.goos == "freebsd" && f.OSABI != elf.ELFOSABI_FREEBSD {
				t.Errorf("ELF OS ABI %v; want FreeBSD", f.OSABI)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("has a program interpreter (PT_INTERP): not static")
				}
			}
			if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
				t.Errorf("imports shared libraries %v (%v): not static", libs, err)
			}
		})
	}
}
