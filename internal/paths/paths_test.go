package paths_test

import (
	"testing"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/paths"
)

// datasource spells the seed directories out in its exported API (an
// importer's go doc must not show an internal name); they are the same
// directories as here.
func TestSeedDirsAgreeWithDatasource(t *testing.T) {
	if datasource.NoCloudSeedDir != paths.SeedDir || datasource.NoCloudNetSeedDir != paths.SeedNetDir {
		t.Errorf("datasource says %s, %s; paths says %s, %s", datasource.NoCloudSeedDir, datasource.NoCloudNetSeedDir, paths.SeedDir, paths.SeedNetDir)
	}
}
