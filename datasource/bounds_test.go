package datasource

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/alloctest"
	"github.com/seedkeeper/seedkeeper/internal/vmtools"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// An 11 KB gzip guestinfo.metadata cost about 470 MiB: it expanded to
// 32 MiB, then the YAML decoder spent 250 bytes on each of its values.
// The metadata may expand to yamlx.MaxDocument, checked as the stream
// expands, and what it expands to is counted before it is decoded.
func TestGuestinfoMetadataBombIsCheapToRefuse(t *testing.T) {
	bomb := gzb64("[" + strings.Repeat("a,", 8<<20) + "a]")
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	text := []byte(bomb)
	var err error
	n := alloctest.Bytes(func() {
		_, err = decodeGuestinfoValue("guestinfo.metadata", "gzip+base64", text, guestinfoLimit("metadata"), discardLog())
	})
	if err == nil || !strings.Contains(err.Error(), "expands to more than 2097152 bytes") {
		t.Fatalf("decode = %v", err)
	}
	if n > 3*yamlx.MaxDocument {
		t.Errorf("refusing it allocated %d bytes", n)
	}
	// Within the bound, the document is still counted before decoding.
	within := gzb64("[" + strings.Repeat("a,", 1<<19) + "a]")
	doc, err := decodeGuestinfoValue("guestinfo.metadata", "gz+b64", []byte(within), guestinfoLimit("metadata"), discardLog())
	if err != nil {
		t.Fatal(err)
	}
	n = alloctest.Bytes(func() { _, _, err = parseVMwareDoc(doc) })
	if !errors.Is(err, yamlx.ErrTooComplex) {
		t.Fatalf("parseVMwareDoc = %v, want ErrTooComplex", err)
	}
	if n > 1<<20 {
		t.Errorf("refusing %d values allocated %d bytes", 1<<19, n)
	}
	// user-data may be larger than a YAML document, up to a seed file.
	if b, err := decodeGuestinfo("base64", []byte(strings.Repeat("QUFB", (maxGuestinfoDecoded+3)/3)), maxGuestinfoDecoded); err == nil {
		t.Errorf("a base64 value of %d bytes was decoded", len(b))
	}
	// The value one byte over is the one at the limit and a second gzip
	// member of one byte: the bound counts the stream, not a member, and
	// the 16 MiB are compressed once.
	atLimit := gzipped(strings.Repeat("x", maxGuestinfoDecoded))
	if b, err := decodeGuestinfo("gzip+base64", b64bytes(atLimit), maxGuestinfoDecoded); err != nil || len(b) != maxGuestinfoDecoded {
		t.Errorf("a gzip value of exactly the limit: %d bytes, %v", len(b), err)
	}
	if _, err := decodeGuestinfo("gzip+base64", b64bytes(append(atLimit, gzipped("x")...)), maxGuestinfoDecoded); err == nil {
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
		n := alloctest.Bytes(func() { _, err = parseNoCloudMeta(data, "meta-data") })
		if !errors.Is(err, yamlx.ErrTooComplex) || !strings.HasPrefix(err.Error(), "meta-data: meta-data: ") {
			t.Errorf("%s: parseNoCloudMeta = %v", name, err)
		}
		if n > 64<<10 {
			t.Errorf("%s: refusing it allocated %d bytes", name, n)
		}
	}
}

// Every file of a seed at its own limit added up to 64 MiB, and boot
// peaked near 97 MiB holding them. The files of one seed are bounded
// together: vendor-data, read last, is what no longer fits, and it is
// dropped without being read, with a warning that names it and the bound.
func TestSeedFilesBoundedTogether(t *testing.T) {
	big := strings.Repeat("x", maxSeedFile)
	files := map[string]string{
		"meta-data":      "instance-id: iid-total\n",
		"user-data":      "#cloud-config\n" + big[len("#cloud-config\n"):],
		"vendor-data":    big,
		"network-config": "version: 2\nethernets: {}\n",
	}
	check := func(t *testing.T, md *Metadata, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(md.UserData) != maxSeedFile || md.VendorData != nil || md.NetworkConfigRaw == nil {
			t.Fatalf("user-data %d bytes, vendor-data %v, network-config %v: want user-data and network-config kept, vendor-data dropped",
				len(md.UserData), md.VendorData != nil, md.NetworkConfigRaw != nil)
		}
		if len(md.Warnings) != 1 || !strings.Contains(md.Warnings[0], "vendor-data dropped") || !strings.Contains(md.Warnings[0], "25165824 byte limit") {
			t.Errorf("warnings = %q, want one naming vendor-data and the bound", md.Warnings)
		}
	}
	t.Run("dir", func(t *testing.T) {
		r := newNCRoot(t)
		r.seed("/var/lib/cloud/seed/nocloud", files)
		var md *Metadata
		var err error
		n := alloctest.Bytes(func() { md, err = readNoCloud(context.Background(), r.opts()) })
		check(t, md, err)
		// user-data once, as it is read; not vendor-data, nor growing copies.
		if n > maxSeedFile+maxSeedFile/2 {
			t.Errorf("reading the seed allocated %d bytes", n)
		}
	})
	t.Run("seedfrom", func(t *testing.T) {
		served := map[string]string{}
		for name, body := range files {
			served["/seed/"+name] = body
		}
		srv, _ := seedServer(t, served, nil)
		r := newNCRoot(t)
		r.write(cmdlinePath, []byte("ds=nocloud;s="+srv.URL+"/seed/\n"))
		o := r.opts()
		o.NoCloud.HTTPClient = srv.Client()
		md, err := readNoCloud(context.Background(), o)
		check(t, md, err)
	})
}

// Each seed was bounded alone, and boot could hold one beside the next
// while merging them: the bytes the merge already holds count against
// what the next seed may read, so a seedfrom after a seed directory has
// what the directory left, and its vendor-data, which no longer fits, is
// dropped with a warning naming it and the bound.
func TestSeedsBoundedTogetherInTheMerge(t *testing.T) {
	vendor := "#cloud-config\n# VENDOR-MARKER\n" + strings.Repeat("x", 9<<20)
	srv, _ := seedServer(t, map[string]string{
		"/seed/meta-data":      "instance-id: iid-from\n",
		"/seed/user-data":      "#cloud-config\n# from seedfrom\n",
		"/seed/vendor-data":    vendor,
		"/seed/network-config": "version: 2\nethernets: {}\n",
	}, nil)
	dirUser := "#cloud-config\n" + strings.Repeat("x", maxSeedFile-len("#cloud-config\n"))
	if len(dirUser)+len(vendor) <= maxSeedTotal || len(vendor) > maxSeedFile {
		t.Fatal("the seeds must each fit and together pass the total")
	}
	r := newNCRoot(t)
	r.seed(noCloudSeedDir, map[string]string{
		"meta-data": "instance-id: iid-dir\nseedfrom: " + srv.URL + "/seed/\n",
		"user-data": dirUser,
	})
	o := r.opts()
	o.NoCloud.HTTPClient = srv.Client()
	md, err := readNoCloud(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if string(md.UserData) != "#cloud-config\n# from seedfrom\n" || md.VendorData != nil || md.NetworkConfigRaw == nil || md.InstanceID != "iid-dir" {
		t.Fatalf("user-data %d bytes, vendor-data %v, network-config %v, instance-id %q: want seedfrom's user-data and network-config, no vendor-data",
			len(md.UserData), md.VendorData != nil, md.NetworkConfigRaw != nil, md.InstanceID)
	}
	if len(md.Warnings) != 1 || !strings.Contains(md.Warnings[0], "/seed/vendor-data dropped") ||
		!strings.Contains(md.Warnings[0], "25165824 byte limit") || strings.Contains(md.Warnings[0], "VENDOR-MARKER") {
		t.Errorf("warnings = %q, want one naming vendor-data and the bound, not quoting it", md.Warnings)
	}
}

// A base64 guestinfo value was copied without its white space before its
// decoded size was checked: the size is counted on the text first.
func TestGuestinfoBase64CountedBeforeCopy(t *testing.T) {
	big := []byte(strings.Repeat("AAAA\n", 6<<20))
	var err error
	n := alloctest.Bytes(func() { _, err = guestinfoBase64(big, maxGuestinfoDecoded) })
	if err == nil || !strings.Contains(err.Error(), "more than the 16777216 allowed") {
		t.Fatalf("err = %v", err)
	}
	if n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
}

// Every guestinfo value at its own limit added up to 34 MiB decoded, and
// in plain base64 boot peaked near 99 MiB holding each value's text, its
// copy without white space and what it decoded to. The values of one read
// are bounded together: vendordata, read last, is what no longer fits,
// and it is dropped with a warning that names it and the bound.
func TestGuestinfoValuesBoundedTogether(t *testing.T) {
	big := b64(strings.Repeat("x", maxGuestinfoDecoded))
	vals := map[string]string{
		"metadata": b64("instance-id: iid-total\n"), "metadata.encoding": "base64",
		"userdata": big, "userdata.encoding": "b64",
		"vendordata": big, "vendordata.encoding": "base64",
	}
	s := newStubVMX(t, ToolRPCTool)
	opt := s.options()
	var asked []string
	opt.VMware.runner = vmtools.RunnerFunc(func(_ context.Context, argv []string) (vmtools.Result, error) {
		key := strings.TrimPrefix(argv[len(argv)-1], "info-get guestinfo.")
		asked = append(asked, key)
		v, ok := vals[key]
		if !ok {
			return vmtools.Result{Stderr: []byte("No value found\n"), ExitCode: 1}, nil
		}
		return vmtools.Result{Stdout: []byte(v + "\n")}, nil
	})
	md, err := readVMware(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if md.InstanceID != "iid-total" || len(md.UserData) != maxGuestinfoDecoded || md.VendorData != nil {
		t.Fatalf("instance-id %q, userdata %d bytes, vendordata %v: want metadata and userdata kept, vendordata dropped",
			md.InstanceID, len(md.UserData), md.VendorData != nil)
	}
	if len(md.Warnings) != 1 || !strings.Contains(md.Warnings[0], "guestinfo.vendordata dropped") ||
		!strings.Contains(md.Warnings[0], "25165824 byte limit") || strings.Contains(md.Warnings[0], "eHh4") {
		t.Errorf("warnings = %q, want one naming guestinfo.vendordata and the bound", md.Warnings)
	}
	if !slices.Contains(md.Origin.Items, "guestinfo.vendordata") {
		t.Errorf("items = %q: the dropped value was present", md.Origin.Items)
	}
	if want := []string{"metadata", "metadata.encoding", "userdata", "userdata.encoding", "vendordata", "vendordata.encoding"}; !slices.Equal(asked, want) {
		t.Errorf("asked %q, want %q", asked, want)
	}
}

// A network mapping JSON cannot hold (a YAML .inf) is encoded as YAML,
// whose encoder keeps every event of the document: about 2 KB a value.
// It is bounded in values, so 60,000 of them are refused, not encoded.
func TestVMwareNetworkYAMLEncodeBounded(t *testing.T) {
	list := make([]any, 60000)
	for i := range list {
		list[i] = "a"
	}
	m := map[string]any{"network": map[string]any{"version": int64(2), "mtu": math.Inf(1), "list": list}}
	var err error
	n := alloctest.Bytes(func() { _, err = vmwareNetworkRaw(m) })
	if err == nil || !strings.Contains(err.Error(), "values to encode") {
		t.Errorf("vmwareNetworkRaw = %v; want it refused, naming the limit", err)
	}
	if n > 16<<20 {
		t.Errorf("vmwareNetworkRaw allocated %d bytes; want under 16 MiB", n)
	}
	small := map[string]any{"network": map[string]any{"version": int64(2), "mtu": math.Inf(1)}}
	if b, err := vmwareNetworkRaw(small); err != nil || !strings.Contains(string(b), ".inf") {
		t.Errorf("a small mapping with .inf: %q, %v", b, err)
	}
}
