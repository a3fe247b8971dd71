package datasource

import (
	"bytes"
	"strings"
	"testing"
)

// A hostile SmartOS host could make boot hold ~15 values
// of the largest size at once; the total of one read is bounded, and the
// error names the key where the budget ran out.
func TestReadSmartOSTotalIsBounded(t *testing.T) {
	st := smMinimal()
	big := bytes.Repeat([]byte("x"), MaxSmartOSTotal/3+1)
	// Read in smartosKeys order: user-script, user-data, then
	// cloud-init:user-data is the one over the budget.
	st.Set("user-script", big)
	st.Set("user-data", big)
	st.Set("cloud-init:user-data", big)
	h, c := smHost(t, st)
	_, err := Read(smContext(t), SourceSmartOS, Options{MdataClient: c})
	if err == nil {
		t.Fatalf("read %d bytes in all without an error", 3*len(big))
	}
	if !strings.Contains(err.Error(), "reading cloud-init:user-data: the values read add up to more than") {
		t.Errorf("err = %v", err)
	}
	for _, r := range smRequests(t, h) {
		if r == "GET sdc:vendor-data" {
			t.Errorf("went on reading after the budget ran out")
		}
	}
	// Just under the budget is read.
	st = smMinimal()
	st.Set("user-script", bytes.Repeat([]byte("x"), MaxSmartOSTotal/2-1024))
	st.Set("user-data", bytes.Repeat([]byte("x"), MaxSmartOSTotal/2-1024))
	if md, _ := smRead(t, st); len(md.SmartOS.UserScript) != MaxSmartOSTotal/2-1024 {
		t.Errorf("user-script %d bytes", len(md.SmartOS.UserScript))
	}
}
