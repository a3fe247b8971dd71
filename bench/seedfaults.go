package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/seedimage"
)

// SeedOptions say how much of the seed-image matrix to run.
type SeedOptions struct {
	// Dir is testdata/nocloud (the gzipped fixtures).
	Dir string
	// Fixtures are the fixture names without ".gz"; nil means every
	// cloud-init seed image but the 33 MB FAT32 one.
	Fixtures []string
	// Runs is the number of mutated images per fixture and mutation.
	Runs int
	// Seed makes the mutations reproducible.
	Seed uint64
	// Deadline bounds one read (default 5s); a read still running after
	// it counts as a hang.
	Deadline time.Duration
	Logf     func(format string, args ...any)
}

// DefaultSeedFixtures are the seed images of testdata/nocloud the short
// matrix corrupts.
var DefaultSeedFixtures = []string{"cloud-localds.iso", "plain.iso", "proxmox.iso", "cloud-localds.vfat", "fat16.img"}

// seedNames are the files a NoCloud seed may hold.
var seedNames = []string{"meta-data", "user-data", "vendor-data", "network-config"}

// mutation changes an image; it returns the changed image and the first
// offset it changed (the cut, for a truncation).
type mutation struct {
	name string
	do   func(img []byte, r *rand.Rand, hot int) ([]byte, int)
}

// pick returns an offset: half the time within the first hot bytes (the
// filesystem structures and the files), else anywhere.
func pick(r *rand.Rand, size, hot int) int {
	if hot > 0 && r.IntN(2) == 0 {
		return r.IntN(min(hot, size))
	}
	return r.IntN(size)
}

var mutations = []mutation{
	{"flip 1 byte", func(img []byte, r *rand.Rand, hot int) ([]byte, int) {
		i := pick(r, len(img), hot)
		img[i] ^= byte(1 + r.IntN(255))
		return img, i
	}},
	{"flip 16 bytes", func(img []byte, r *rand.Rand, hot int) ([]byte, int) {
		first := len(img)
		for range 16 {
			i := pick(r, len(img), hot)
			img[i] ^= byte(1 + r.IntN(255))
			first = min(first, i)
		}
		return img, first
	}},
	{"random 512 B sector", func(img []byte, r *rand.Rand, hot int) ([]byte, int) {
		i := pick(r, len(img), hot) &^ 511
		for j := i; j < min(i+512, len(img)); j++ {
			img[j] = byte(r.Uint32())
		}
		return img, i
	}},
	{"zeroed 2 KiB block", func(img []byte, r *rand.Rand, hot int) ([]byte, int) {
		i := pick(r, len(img), hot) &^ 2047
		clear(img[i:min(i+2048, len(img))])
		return img, i
	}},
	{"truncated", func(img []byte, r *rand.Rand, hot int) ([]byte, int) {
		n := pick(r, len(img), hot)
		return img[:n], n
	}},
}

// seedTruth is what the pristine image holds.
type seedTruth struct {
	files map[string][]byte
	end   int // the end of the last file's bytes in the image
}

func readGz(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(zr)
}

// readSeed reads every seed file of img; missing files are left out.
func readSeed(img []byte, name string) (map[string][]byte, error) {
	im, err := seedimage.OpenReader(bytes.NewReader(img), int64(len(img)), name)
	if err != nil {
		return nil, err
	}
	defer im.Close()
	files := map[string][]byte{}
	for _, n := range seedNames {
		b, err := im.ReadFile(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files[n] = b
	}
	return files, nil
}

// RunSeedMatrix corrupts each fixture deterministically and reads it with
// the in-process image reader (seedimage) and with the whole NoCloud
// reader (datasource.Read of NoCloud on the image file). A read must end in
// a clean error or return the pristine files; it may return other bytes
// only when the mutation touched the image before the end of the files'
// data (ISO9660 and FAT have no checksums: a flip in a file or its
// directory entry changes what any reader returns). A change caused by a
// mutation past that point is a wrong read.
func RunSeedMatrix(ctx context.Context, o SeedOptions) ([]*Row, error) {
	if o.Runs <= 0 {
		o.Runs = 1
	}
	o.Deadline = cmpOr(o.Deadline, 5*time.Second)
	fixtures := o.Fixtures
	if fixtures == nil {
		fixtures = DefaultSeedFixtures
	}
	tmp, err := os.MkdirTemp("", "skbench-seed-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var rows []*Row
	for fi, fx := range fixtures {
		img, err := readGz(filepath.Join(o.Dir, fx+".gz"))
		if err != nil {
			return rows, err
		}
		files, err := readSeed(img, fx)
		if err != nil {
			return rows, fmt.Errorf("pristine %s: %w", fx, err)
		}
		truth := seedTruth{files: files}
		for _, b := range files {
			if i := bytes.Index(img, b); i >= 0 && len(b) > 0 {
				truth.end = max(truth.end, i+len(b))
			}
		}
		for mi, m := range mutations {
			reader := &Row{Area: "seed", Case: fx + ": " + m.name, Client: "seedimage"}
			whole := &Row{Area: "seed", Case: fx + ": " + m.name, Client: "ReadNoCloud"}
			r := rand.New(rand.NewPCG(o.Seed, uint64(fi<<8|mi)))
			for run := range o.Runs {
				if ctx.Err() != nil {
					return rows, ctx.Err()
				}
				bad, at := m.do(bytes.Clone(img), r, truth.end)
				seedRead(reader, truth, bad, at, o.Deadline, fx)
				path := filepath.Join(tmp, fmt.Sprintf("%d-%d-%d.img", fi, mi, run))
				if err := os.WriteFile(path, bad, 0o600); err != nil {
					return rows, err
				}
				noCloudRead(whole, path, o.Deadline)
				os.Remove(path)
			}
			for _, row := range []*Row{reader, whole} {
				if o.Logf != nil {
					o.Logf("%s", row)
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// guarded runs f with a deadline, turning a panic into panicked.
func guarded(deadline time.Duration, f func() error) (err error, panicked any, hung bool, took time.Duration) {
	type res struct {
		err error
		p   any
	}
	done := make(chan res, 1)
	start := time.Now()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- res{p: p}
			}
		}()
		done <- res{err: f()}
	}()
	select {
	case r := <-done:
		return r.err, r.p, false, time.Since(start)
	case <-time.After(deadline):
		return nil, nil, true, time.Since(start)
	}
}

func seedRead(row *Row, truth seedTruth, img []byte, at int, deadline time.Duration, name string) {
	var got map[string][]byte
	err, p, hung, took := guarded(deadline, func() error {
		var err error
		got, err = readSeed(img, name)
		return err
	})
	row.Runs++
	row.Time = append(row.Time, took)
	switch {
	case hung:
		row.Hangs++
		row.note("read still running after %s (mutation at %d)", deadline, at)
	case p != nil:
		row.Panics++
		row.note("panic (mutation at %d): %v", at, p)
	case err != nil:
		row.CorrectErr++
		if strings.Contains(err.Error(), "panicked") {
			row.Recovered++
		}
	default:
		same := len(got) == len(truth.files)
		for n, b := range truth.files {
			if g, ok := got[n]; !ok || !bytes.Equal(g, b) {
				same = false
			}
		}
		switch {
		case same:
			row.Correct++
		case at < truth.end:
			row.Failed++ // changed with the image: no checksum can catch it
		default:
			row.Wrong++
			row.note("files changed by a mutation at %d, past the end of the files' data at %d", at, truth.end)
		}
	}
}

func noCloudRead(row *Row, path string, deadline time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	err, p, hung, took := guarded(deadline+time.Second, func() error {
		_, err := datasource.Read(ctx, datasource.SourceNoCloud, datasource.Options{NoCloud: datasource.NoCloudOptions{SeedPath: path, SkipDirs: true}})
		return err
	})
	row.Runs++
	row.Time = append(row.Time, took)
	switch {
	case hung:
		row.Hangs++
		row.note("ReadNoCloud still running after %s", deadline)
	case p != nil:
		row.Panics++
		row.note("panic: %v", p)
	case err != nil:
		row.CorrectErr++
		if strings.Contains(err.Error(), "panicked") {
			row.Recovered++
		}
	default:
		row.Correct++
	}
}
