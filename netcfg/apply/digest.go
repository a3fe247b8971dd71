package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrPlanChanged is returned by Sync when SyncOptions.Expect names a plan
// and the plan made right before applying is another: nothing was
// changed.
var ErrPlanChanged = errors.New("the plan is no longer the one that was read")

// Digest is a digest of exactly what the plan does and what it was
// planned against: each operation (with the live values it changes,
// from and to), the notes, which links it owns and by which MAC and
// names, the NICs it found absent, and the receipt of what seedkeeper
// had added. A plan made again with one digest does the same to the same
// links.
func (p *Plan) Digest() string {
	ops := make([]string, len(p.Ops))
	for i, op := range p.Ops {
		ops[i] = op.String()
	}
	h := sha256.New()
	json.NewEncoder(h).Encode(struct {
		Ops           []string
		Notes         []string
		Owned         []string
		OwnedMAC      map[string]string
		OwnedName     map[string]string
		OwnedAltNames map[string][]string
		Absent        []string
		Receipt       *Receipt
	}{ops, p.Notes, p.Owned, p.OwnedMAC, p.OwnedName, p.OwnedAltNames, p.Absent, p.receipt})
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// checkExpected is SyncOptions.Expect's check of the plan about to be
// applied.
func checkExpected(p *Plan, want string) error {
	if want == "" || strings.EqualFold(p.Digest(), want) {
		return nil
	}
	return fmt.Errorf("%w: its digest is %s, not %s; nothing was changed", ErrPlanChanged, p.Digest(), want)
}
