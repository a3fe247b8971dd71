package datasource

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// An 11 KB gzip guestinfo.metadata cost about 470 MiB: it expanded to
// 32 MiB, then the YAML decoder spent 250 bytes on each of its values.
// The metadata may expand to yamlx.MaxDocument, checked as the stream
// expands, and what it expands to is counted before it is decoded.
func TestGuestinfoMetadataBombIsCheapToRefuse(t *testing.T) {
	bomb := gzb64("[" + strings.Repeat("a,", 8<<20) + "a]")
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	g := &rawGuestinfo{values: map[string]string{"metadata": bomb, "metadata.encoding": "gzip+base64"}}
	var err error
	n := allocated(func() { _, err = g.decode("metadata", discardLog()) })
	if err == nil || !strings.Contains(err.Error(), "expands to more than 2097152 bytes") {
		t.Fatalf("decode = %v", err)
	}
	if n > 3*yamlx.MaxDocument {
		t.Errorf("refusing it allocated %d bytes", n)
	}
	// Within the bound, the document is still counted before decoding.
	within := gzb64("[" + strings.Repeat("a,", 1<<19) + "a]")
	g = &rawGuestinfo{values: map[string]string{"metadata": within, "metadata.encoding": "gz+b64"}}
	doc, err := g.decode("metadata", discardLog())
	if err != nil {
		t.Fatal(err)
	}
	n = allocated(func() { _, err = parseVMwareDoc(doc) })
	if !errors.Is(err, yamlx.ErrTooComplex) {
		t.Fatalf("parseVMwareDoc = %v, want ErrTooComplex", err)
	}
	if n > 1<<20 {
		t.Errorf("refusing %d values allocated %d bytes", 1<<19, n)
	}
	// user-data may be larger than a YAML document, up to a seed file.
	if b, err := decodeGuestinfo("base64", strings.Repeat("QUFB", (maxGuestinfoDecoded+3)/3), maxGuestinfoDecoded); err == nil {
		t.Errorf("a base64 value of %d bytes was decoded", len(b))
	}
	if b, err := decodeGuestinfo("gzip+base64", gzb64(strings.Repeat("x", maxGuestinfoDecoded)), maxGuestinfoDecoded); err != nil || len(b) != maxGuestinfoDecoded {
		t.Errorf("a gzip value of exactly the limit: %d bytes, %v", len(b), err)
	}
	if _, err := decodeGuestinfo("gzip+base64", gzb64(strings.Repeat("x", maxGuestinfoDecoded+1)), maxGuestinfoDecoded); err == nil {
		t.Error("a gzip value one byte over the limit was taken")
	}
}

// A 4 MiB meta-data cost about 500 MiB in the YAML decoder. Its values
// are counted first now.
func TestNoCloudMetaDataIsCountedBeforeDecoding(t *testing.T) {
	for name, doc := range map[string]string{
		"values": "instance-id: i\nx: [" + strings.Repeat("a,", 1<<20) + "a]\n",
		"size":   "instance-id: i\nx: |\n" + strings.Repeat("  "+strings.Repeat("y", 1000)+"\n", 4<<10),
	} {
		data := []byte(doc)
		var err error
		n := allocated(func() { _, err = parseNoCloudMeta(data, "meta-data") })
		if !errors.Is(err, yamlx.ErrTooComplex) || !strings.HasPrefix(err.Error(), "meta-data: meta-data: ") {
			t.Errorf("%s: parseNoCloudMeta = %v", name, err)
		}
		if n > 64<<10 {
			t.Errorf("%s: refusing it allocated %d bytes", name, n)
		}
	}
}
