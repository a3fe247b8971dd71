package vm

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"testing"
)

// cpioEntry is one entry read back from a newc archive.
type cpioEntry struct {
	name         string
	mode         uint32
	nlink        uint32
	rmaj, rmin   uint32
	data         string
	headerOffset int
}

// readNewc parses an uncompressed newc archive up to its trailer, checking
// the magic and the 4-byte alignment the kernel relies on.
func readNewc(b []byte) ([]cpioEntry, error) {
	var out []cpioEntry
	off := 0
	align := func(n int) int { return (n + 3) &^ 3 }
	for {
		if off%4 != 0 {
			return nil, fmt.Errorf("entry at %d is not 4-byte aligned", off)
		}
		if len(b) < off+110 {
			return nil, fmt.Errorf("short header at %d", off)
		}
		h := b[off : off+110]
		if string(h[:6]) != "070701" {
			return nil, fmt.Errorf("bad magic %q at %d", h[:6], off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				panic(err)
			}
			return uint32(v)
		}
		mode, nlink, size := field(1), field(4), int(field(6))
		rmaj, rmin, namesize := field(9), field(10), int(field(11))
		nameEnd := off + 110 + namesize
		if len(b) < nameEnd || b[nameEnd-1] != 0 {
			return nil, fmt.Errorf("name at %d not NUL-terminated", off)
		}
		name := string(b[off+110 : nameEnd-1])
		dataOff := align(nameEnd)
		if len(b) < dataOff+size {
			return nil, fmt.Errorf("%s: short data", name)
		}
		e := cpioEntry{name: name, mode: mode, nlink: nlink, rmaj: rmaj, rmin: rmin,
			data: string(b[dataOff : dataOff+size]), headerOffset: off}
		for _, p := range b[nameEnd:dataOff] {
			if p != 0 {
				return nil, fmt.Errorf("%s: non-NUL name padding", name)
			}
		}
		off = align(dataOff + size)
		if name == "TRAILER!!!" {
			if off != len(b) {
				return nil, fmt.Errorf("%d bytes after the trailer", len(b)-off)
			}
			return out, nil
		}
		out = append(out, e)
	}
}

func TestInitramfs(t *testing.T) {
	var buf bytes.Buffer
	a := newInitramfs(&buf)
	a.File("/sbin/tool", 0o755, []byte("12345")) // 5 bytes: needs padding
	a.Dir("sbin", 0o755)                         // already there: not repeated
	a.Symlink("/usr/sbin/mdata-get", "/sbin/tool")
	a.CharDev("/dev/console", 0o600, 5, 1)
	a.File("empty", 0o644, nil)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readNewc(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []cpioEntry{
		{name: "sbin", mode: modeDir | 0o755, nlink: 2},
		{name: "sbin/tool", mode: modeFile | 0o755, nlink: 1, data: "12345"},
		{name: "usr", mode: modeDir | 0o755, nlink: 2},
		{name: "usr/sbin", mode: modeDir | 0o755, nlink: 2},
		{name: "usr/sbin/mdata-get", mode: modeSymlink | 0o777, nlink: 1, data: "/sbin/tool"},
		{name: "dev", mode: modeDir | 0o755, nlink: 2},
		{name: "dev/console", mode: modeCharDev | 0o600, nlink: 1, rmaj: 5, rmin: 1},
		{name: "empty", mode: modeFile | 0o644, nlink: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		g.headerOffset = 0
		if g != want[i] {
			t.Errorf("entry %d: got %+v, want %+v", i, g, want[i])
		}
	}
}

// TestInitramfsConcatenated checks that two archives written back to back
// are two complete gzip members, as the kernel unpacks them.
func TestInitramfsConcatenated(t *testing.T) {
	var buf bytes.Buffer
	for _, name := range []string{"a", "b"} {
		a := newInitramfs(&buf)
		a.File(name, 0o644, []byte(name))
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	var names []string
	for {
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		es, err := readNewc(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			names = append(names, e.name+"="+e.data)
		}
		if err := zr.Reset(&buf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
	}
	if fmt.Sprint(names) != "[a=a b=b]" {
		t.Errorf("entries %v, want [a=a b=b]", names)
	}
}

func TestInitramfsRejectsDataOnDevice(t *testing.T) {
	a := newInitramfs(io.Discard)
	a.header("dev/x", modeCharDev|0o600, 3, 1, 1)
	if err := a.Close(); err == nil {
		t.Fatal("a device entry with data was accepted")
	}
}
