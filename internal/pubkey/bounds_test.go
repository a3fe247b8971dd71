package pubkey_test

import (
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/pubkey"
)

// datasource states the bounds as its own constants (an importer reads
// them without an internal package); they are the filter's bounds.
func TestBoundsAreDatasources(t *testing.T) {
	if pubkey.MaxKey != datasource.MaxPublicKey || pubkey.MaxKeys != datasource.MaxPublicKeys {
		t.Fatalf("pubkey bounds %d, %d; datasource says %d, %d", pubkey.MaxKey, pubkey.MaxKeys, datasource.MaxPublicKey, datasource.MaxPublicKeys)
	}
}
