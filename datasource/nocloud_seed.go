package datasource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/redact"
	"github.com/seedkeeper/seedkeeper/internal/seedimage"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// The files of a NoCloud seed (cloud-init's pathprefix2dict arguments).
const (
	ncMetaData      = "meta-data"
	ncUserData      = "user-data"
	ncVendorData    = "vendor-data"
	ncNetworkConfig = "network-config"
)

// maxSeedFile bounds every seed file read, local or fetched.
const maxSeedFile = seedimage.MaxFileSize

// maxSeedTotal bounds the seed files a NoCloud read holds, all its seeds
// (a directory, an image, a seedfrom location) taken together: what the
// merge already holds counts against what the next seed may read. It
// leaves room for user-data at maxSeedFile beside meta-data and
// network-config at the document limit of yamlx, and keeps the merged
// seed, with what decoding and writing it costs, inside boot's 64 MiB
// peak-RSS budget (SECURITY.md).
const maxSeedTotal = 24 << 20

// seedReadOrder are the files of a seed in the order they are read: what the
// seed cannot do without first, so that, when the files add up to more
// than maxSeedTotal, what matters least (vendor-data, then
// network-config) is what no longer fits.
var seedReadOrder = []string{ncMetaData, ncUserData, ncNetworkConfig, ncVendorData}

// readSeedFiles fills s with seedReadOrder, each read by get(file, limit)
// within maxSeedFile and what is left of maxSeedTotal once the used bytes
// the merge already holds and the files read before it are counted, so
// that no file is read past the total. get gives an error matching fs.ErrNotExist for
// an absent file (skipped) and an ErrTooLarge for one over limit. An
// optional file that no longer fits is dropped with a warning naming it
// and the bound; a required one fails the seed.
func readSeedFiles(s *noCloudSeed, used int64, get func(file string, limit int64) (name string, data []byte, err error)) error {
	total := used
	for _, file := range seedReadOrder {
		limit := max(0, min(maxSeedFile, maxSeedTotal-total))
		name, b, err := get(file, limit)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil && limit < maxSeedFile && tooLarge(err) {
			if file == ncMetaData || file == ncUserData {
				return fmt.Errorf("%s: the seed files, with those already merged, add up to more than the %d byte limit for the NoCloud seeds", name, maxSeedTotal)
			}
			s.warnings = append(s.warnings, fmt.Sprintf("%s dropped: the seed files, with those already merged, add up to more than the %d byte limit for the NoCloud seeds (%d bytes were left for it)", name, maxSeedTotal, limit))
			continue
		}
		if err != nil {
			return err
		}
		total += int64(len(b))
		s.set(file, name, b)
	}
	return nil
}

func tooLarge(err error) bool {
	return errors.Is(err, fsutil.ErrTooLarge) || errors.Is(err, seedimage.ErrTooLarge)
}

// noCloudSeed is what one seed (a directory, an image, a seedfrom URL)
// holds. A nil slice means the file is absent; an empty one that it is
// empty.
type noCloudSeed struct {
	// transport names the seed in Origin ("dir:/var/lib/cloud/seed/nocloud").
	transport string
	// names are how each file is named in errors and Origin.Items.
	names                       map[string]string
	meta, user, vendor, network []byte
	hasMeta, hasUser            bool
	hasVendor, hasNetwork       bool
	// warnings say what was dropped while reading.
	warnings []string
}

func (s *noCloudSeed) set(file, name string, data []byte) {
	if s.names == nil {
		s.names = map[string]string{}
	}
	s.names[file] = name
	if data == nil {
		data = []byte{}
	}
	switch file {
	case ncMetaData:
		s.meta, s.hasMeta = data, true
	case ncUserData:
		s.user, s.hasUser = data, true
	case ncVendorData:
		s.vendor, s.hasVendor = data, true
	case ncNetworkConfig:
		s.network, s.hasNetwork = data, true
	}
}

// complete reports whether the required files are there.
func (s *noCloudSeed) complete() bool { return s.hasMeta && s.hasUser }

// missing names the required files that are absent.
func (s *noCloudSeed) missing() string {
	var m []string
	if !s.hasMeta {
		m = append(m, ncMetaData)
	}
	if !s.hasUser {
		m = append(m, ncUserData)
	}
	return strings.Join(m, " and ")
}

// readLocal reads the seed file at system path p under root with the one
// bounded reader: p is resolved as the kernel would (no lexical ".."), and
// only a regular file of at most limit bytes is read.
func readLocal(ctx context.Context, root sysroot.Root, p string, limit int64) ([]byte, error) {
	return fsutil.ReadFileIn(ctx, string(root), p, limit)
}

// readSysFile reads a small kernel or firmware file (/proc/cmdline,
// /sys/class/dmi/id/*) under root with the one bounded reader.
func readSysFile(root sysroot.Root, p string) ([]byte, error) {
	return fsutil.ReadFileIn(context.Background(), string(root), p, fsutil.TinyFile)
}

// readSeedDir reads the seed files in the directory sysPath (a system path,
// read under root), within what used leaves of maxSeedTotal. A missing
// file is simply absent.
func readSeedDir(ctx context.Context, root sysroot.Root, sysPath string, used int64) (noCloudSeed, error) {
	s := noCloudSeed{transport: "dir:" + sysPath}
	err := readSeedFiles(&s, used, func(file string, limit int64) (string, []byte, error) {
		name := path.Join(sysPath, file)
		b, err := readLocal(ctx, root, name, limit)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("reading %s: %w", name, err)
		}
		return name, b, err
	})
	return s, err
}

// readSeedImage reads the seed files from the ISO9660 or FAT image or
// device at the system path p under root (opened confined to it), within
// what used leaves of maxSeedTotal; dev is how the device is named in
// Origin (its system path).
func readSeedImage(root sysroot.Root, p, dev string, used int64) (noCloudSeed, error) {
	im, err := seedimage.OpenIn(root, p)
	if err != nil {
		return noCloudSeed{}, err
	}
	defer im.Close()
	s := noCloudSeed{transport: string(im.Type()) + ":" + dev}
	err = readSeedFiles(&s, used, func(file string, limit int64) (string, []byte, error) {
		b, err := im.ReadFileMax(file, limit)
		return s.transport + ":" + file, b, err
	})
	return s, err
}

// errSeedNotFound marks a seedfrom file that does not exist (a 404).
var errSeedNotFound = errors.New("not found")

// seedfromURLs returns where each seed file is for a seedfrom base:
// a "%s" in the base is replaced by the file name; otherwise the name is
// appended, after a "/" when the base has neither one nor a query (as
// current cloud-init does).
func seedfromURLs(base string) map[string]string {
	urls := map[string]string{}
	for _, file := range []string{ncMetaData, ncUserData, ncVendorData, ncNetworkConfig} {
		if strings.Contains(base, "%s") {
			urls[file] = strings.ReplaceAll(base, "%s", file)
			continue
		}
		b := base
		if !strings.HasSuffix(b, "/") && !strings.Contains(b, "?") {
			b += "/"
		}
		urls[file] = b + file
	}
	return urls
}

// readSeedfrom reads a seed from a seedfrom location: file://, an absolute
// path (both under root) or http(s)://, within what used leaves of
// maxSeedTotal. meta-data and user-data must exist; vendor-data and
// network-config may not.
func (o *NoCloudOptions) readSeedfrom(ctx context.Context, base string, used int64) (noCloudSeed, error) {
	s := noCloudSeed{transport: "seedfrom:" + redact.URL(base)}
	var get func(ctx context.Context, loc string, limit int64) ([]byte, error)
	switch {
	case strings.HasPrefix(base, "file://") || strings.HasPrefix(base, "/"):
		get = func(ctx context.Context, loc string, limit int64) ([]byte, error) {
			p := strings.TrimPrefix(loc, "file://")
			b, err := readLocal(ctx, o.root, p, limit)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, errSeedNotFound
			}
			return b, err
		}
	case strings.HasPrefix(base, "http://") || strings.HasPrefix(base, "https://"):
		get = o.fetchURL
	default:
		// Named only when it looks like a scheme: the value may be
		// anything, a password pasted in the wrong place included.
		scheme, _, ok := strings.Cut(base, "://")
		if !ok || len(scheme) > 16 || strings.IndexFunc(scheme, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')
		}) >= 0 {
			return s, fmt.Errorf("seedfrom: not a URL or an absolute path (%d bytes; file://, / and http(s):// are supported)", len(base))
		}
		return s, fmt.Errorf("seedfrom %s: unsupported scheme %q (file://, / and http(s):// are)", redact.URL(base), scheme)
	}
	urls := seedfromURLs(base)
	err := readSeedFiles(&s, used, func(file string, limit int64) (string, []byte, error) {
		name := redact.URL(urls[file])
		b, err := get(ctx, urls[file], limit)
		switch {
		case errors.Is(err, errSeedNotFound) && (file == ncMetaData || file == ncUserData):
			err = fmt.Errorf("seedfrom: %s: %w", name, err)
		case errors.Is(err, errSeedNotFound):
			err = fs.ErrNotExist
		case err != nil:
			err = fmt.Errorf("seedfrom: %w", err)
		}
		return name, b, err
	})
	return s, err
}

// Defaults for fetching an http(s) seedfrom.
const (
	defaultSeedfromTries   = 3
	defaultSeedfromBackoff = time.Second
	defaultSeedfromTimeout = 10 * time.Second
)

// fetchURL GETs u with the options' retry policy: up to SeedfromTries
// attempts, waiting SeedfromBackoff, then twice that, and so on, each
// attempt bounded by SeedfromTimeout. Connection errors, 5xx and 429 are
// retried; 404 and 410 are errSeedNotFound at once; other statuses fail
// at once.
func (o *NoCloudOptions) fetchURL(ctx context.Context, u string, limit int64) ([]byte, error) {
	tries, wait, timeout := o.SeedfromTries, o.SeedfromBackoff, o.SeedfromTimeout
	if tries <= 0 {
		tries = defaultSeedfromTries
	}
	if wait <= 0 {
		wait = defaultSeedfromBackoff
	}
	if timeout <= 0 {
		timeout = defaultSeedfromTimeout
	}
	client := o.HTTPClient
	if client == nil {
		client = seedfromClient
	}
	var last error
	for try := 1; ; try++ {
		b, retry, err := fetchOnce(ctx, client, u, timeout, limit)
		if err == nil || !retry {
			return b, err
		}
		last = err
		if try >= tries {
			return nil, fmt.Errorf("%w (after %d tries)", last, tries)
		}
		o.logger().Debug("seedfrom fetch failed; retrying", "url", redact.URL(u), "err", err, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (giving up: %w)", last, ctx.Err())
		case <-t.C:
		}
		wait *= 2
	}
}

// maxResponseHeader bounds the status line and headers of a seedfrom
// response (the HTTP library's default is 10 MiB), which are held whole.
const maxResponseHeader = 64 << 10

// seedfromClient is the HTTP client of a seedfrom fetch when Options
// names none: the default one, with the response header bounded.
var seedfromClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxResponseHeaderBytes = maxResponseHeader
	return &http.Client{Transport: t}
}()

// statusText says what a response's status was: its code and the
// standard text for it, never the server's own reason phrase, which is
// text from outside and goes no further.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprintf("status %d", code)
}

func fetchOnce(ctx context.Context, client *http.Client, u string, timeout time.Duration, limit int64) (data []byte, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		// The library's error names the whole URL, query included.
		return nil, true, redact.Error(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, false, errSeedNotFound
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return nil, true, fmt.Errorf("GET %s: %s", redact.URL(u), statusText(resp.StatusCode))
	default:
		return nil, false, fmt.Errorf("GET %s: %s", redact.URL(u), statusText(resp.StatusCode))
	}
	if resp.ContentLength > limit {
		return nil, false, fmt.Errorf("GET %s: %w: a body of %d bytes, the limit is %d", redact.URL(u), fsutil.ErrTooLarge, resp.ContentLength, limit)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, true, fmt.Errorf("GET %s: reading the body: %w", redact.URL(u), err)
	}
	if int64(len(b)) > limit {
		return nil, false, fmt.Errorf("GET %s: %w: the body is over the %d byte limit", redact.URL(u), fsutil.ErrTooLarge, limit)
	}
	return b, false, nil
}
