package datasource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/paths"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// The kept spec: a customization spec lives in /run, gone at the next
// reboot, while what it set up must hold on every boot of the VM (its
// static addresses are in seedkeeper's network files, under /run too).
// So a boot that applies a spec keeps a copy of it in paths.VMwareIMCSpec
// (0600, written atomically), and a later boot on VMware whose guestinfo
// has nothing and where no spec is waiting reads that copy as the VMware
// source's data (transport imc, the kept file its item): the same
// instance ID, hostname and network, and nothing reported to vCenter.
//
// The copy is the spec itself, cust.cfg and the files it names, read
// again by parseIMC: a later boot then gets what the first one got, with
// the same warnings, and there is no second reading of a spec to keep in
// step with the first. It is cust.cfg without its [PASSWORD] section
// (the root password is set once, and never kept), in a JSON envelope
// with the marker and the time it was applied.

// keptIMCFormat names the envelope's format and version.
const keptIMCFormat = "seedkeeper-vmware-imc-spec/1"

// maxKeptIMCFiles bounds the files a kept spec holds beside cust.cfg (the
// cloud-init kind names a meta-data and a user-data).
const maxKeptIMCFiles = 2

// maxKeptIMC bounds the kept file: a spec at its bounds (cust.cfg, a
// meta-data and a user-data), base64-encoded in JSON, and the envelope.
const maxKeptIMC = (maxIMCSpec+yamlx.MaxDocument+maxGuestinfoDecoded)/3*4 + 16<<10

// keptIMC is the kept file.
type keptIMC struct {
	Format   string `json:"format"`
	MarkerID string `json:"marker_id,omitempty"`
	// Applied is when the spec was applied (RFC 3339, UTC).
	Applied string `json:"applied"`
	// CustCfg is cust.cfg without its [PASSWORD] section.
	CustCfg []byte `json:"cust_cfg"`
	// Files are the files cust.cfg names, by name.
	Files map[string][]byte `json:"files,omitempty"`
	// InstanceID is set for a spec applied while the VM ran
	// (seedkeeper watch): the instance ID the source reported to the
	// boot it was applied in. A live spec never changes the instance
	// ID, at once or at a later boot, so that ID holds in place of the
	// spec's own (INSTANCE-ID, or the DMI product_uuid) whenever this
	// customization is read again.
	InstanceID string `json:"instance_id,omitempty"`
}

// digest identifies the spec read from iMCDir by what of it is kept
// (its marker, cust.cfg without the password, the files it names): a
// SHA-256, hex; "" for a spec that keeps nothing (the kept copy).
func (s *IMCSpec) digest() string {
	k := s.keep
	if k == nil {
		return ""
	}
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(k.MarkerID))
	field(k.CustCfg)
	for _, name := range slices.Sorted(maps.Keys(k.Files)) {
		field([]byte(name))
		field(k.Files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keptIMCHint says, in an error about the kept file, what it is and the
// way out.
const keptIMCHint = "(seedkeeper's copy of the customization spec an earlier boot applied; remove it to boot without it)"

// stripIMCPassword returns cust.cfg without the lines of its [PASSWORD]
// sections (their header and continuation lines included), as
// parseIMCINI reads them; nothing when it does not read (the spec was read
// before it is kept, so it does).
func stripIMCPassword(b []byte) []byte {
	ini, err := parseIMCINI(b)
	if err != nil {
		return nil
	}
	var out bytes.Buffer
	for i, line := range strings.SplitAfter(string(b), "\n") {
		if ini.lineSection[i] != "PASSWORD" {
			out.WriteString(line)
		}
	}
	return out.Bytes()
}

// keptEnvelope is the kept file of a spec, as json.Marshal writes the
// keptIMC (its fields in order, the files by name, []byte as standard
// base64) and a newline, made piece by piece: the base64 is written as
// it is read, so that the file can be compared with one on disk without
// holding a second copy.
type keptEnvelope struct {
	pieces [][]byte // text as is, or (odd indexes) bytes to base64
	size   int
}

func newKeptEnvelope(k *keptIMC, applied string) (*keptEnvelope, error) {
	str := func(s string) (string, error) {
		b, err := json.Marshal(s)
		return string(b), err
	}
	var errs []error
	q := func(s string) string {
		v, err := str(s)
		errs = append(errs, err)
		return v
	}
	head := `{"format":` + q(keptIMCFormat)
	if k.MarkerID != "" {
		head += `,"marker_id":` + q(k.MarkerID)
	}
	head += `,"applied":` + q(applied) + `,"cust_cfg":`
	e := &keptEnvelope{}
	e.add(head, k.CustCfg)
	if len(k.Files) > 0 {
		sep := `,"files":{`
		for _, name := range slices.Sorted(maps.Keys(k.Files)) {
			e.add(sep+q(name)+`:`, k.Files[name])
			sep = ","
		}
		e.text("}")
	}
	if k.InstanceID != "" {
		e.text(`,"instance_id":` + q(k.InstanceID))
	}
	e.text("}\n")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if e.size-1 > maxKeptIMC {
		return nil, fmt.Errorf("%d bytes, more than %d", e.size-1, maxKeptIMC)
	}
	return e, nil
}

// text appends text as is.
func (e *keptEnvelope) text(t string) {
	if n := len(e.pieces); n%2 == 1 {
		e.pieces[n-1] = append(e.pieces[n-1], t...)
	} else {
		e.pieces = append(e.pieces, []byte(t))
	}
	e.size += len(t)
}

// add appends text and then data as json.Marshal writes a []byte: a
// string of its base64, or null when it is nil.
func (e *keptEnvelope) add(text string, data []byte) {
	if data == nil {
		e.text(text + "null")
		return
	}
	e.text(text + `"`)
	e.pieces = append(e.pieces, data)
	e.size += base64.StdEncoding.EncodedLen(len(data))
	e.text(`"`)
}

// bytes is the file, in one buffer of its exact size (json.Marshal's
// bytes without its growing buffer and final copy: at the bounds one
// 24 MiB buffer, not three).
func (e *keptEnvelope) bytes() ([]byte, error) {
	b := make([]byte, e.size)
	if _, err := io.ReadFull(e.reader(), b); err != nil {
		return nil, err
	}
	return b, nil
}

// reader reads the file.
func (e *keptEnvelope) reader() io.Reader {
	rs := make([]io.Reader, len(e.pieces))
	for i, p := range e.pieces {
		if i%2 == 0 {
			rs[i] = bytes.NewReader(p)
		} else {
			rs[i] = &base64Reader{src: p}
		}
	}
	return io.MultiReader(rs...)
}

// sameAs reports whether old is this file but for the time it was
// applied (the RFC 3339 UTC time, 20 bytes, at the same place in both),
// reading it against the envelope a piece at a time.
func (e *keptEnvelope) sameAs(old []byte) bool {
	return e.sameAsReader(context.Background(), bytes.NewReader(old), int64(len(old)))
}

// sameAsReader is sameAs over a file of size bytes read from r, a piece
// at a time.
func (e *keptEnvelope) sameAsReader(ctx context.Context, r io.Reader, size int64) bool {
	if size != int64(e.size) {
		return false
	}
	// The applied time is in the first piece, after "applied":".
	const key = `"applied":"`
	i := bytes.Index(e.pieces[0], []byte(key))
	if i < 0 || len(e.pieces[0]) < i+len(key)+20 {
		return false
	}
	at := i + len(key)
	var got, want [4096]byte
	env := e.reader()
	for off := 0; off < e.size; {
		if ctx.Err() != nil {
			return false
		}
		n, err := io.ReadFull(env, got[:min(len(got), e.size-off)])
		if err != nil {
			return false
		}
		if _, err := io.ReadFull(r, want[:n]); err != nil {
			return false
		}
		// Mask the applied time of both.
		for j := range n {
			if p := off + j; p >= at && p < at+20 {
				got[j] = want[j]
			}
		}
		if !bytes.Equal(got[:n], want[:n]) {
			return false
		}
		off += n
	}
	return true
}

// base64Reader reads src in standard base64.
type base64Reader struct {
	src []byte
	out []byte // encoded, not yet read
	buf [4096]byte
}

func (r *base64Reader) Read(p []byte) (int, error) {
	if len(r.out) == 0 {
		if len(r.src) == 0 {
			return 0, io.EOF
		}
		n := min(len(r.src), 3*1024)
		if n < len(r.src) {
			n -= n % 3 // padding only at the end
		}
		r.out = r.buf[:base64.StdEncoding.EncodedLen(n)]
		base64.StdEncoding.Encode(r.out, r.src[:n])
		r.src = r.src[n:]
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// decodeKeptIMC reads a kept file's envelope; an error says what is
// wrong, never quoting it.
func decodeKeptIMC(b []byte) (*keptIMC, error) {
	if len(b) > maxKeptIMC {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadIMCSpec, len(b), maxKeptIMC)
	}
	var k keptIMC
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%w: not a kept spec: %s", ErrBadIMCSpec, jsonErrorWhere(err))
	}
	if k.Format != keptIMCFormat {
		return nil, fmt.Errorf("%w: not a kept spec of format %s", ErrBadIMCSpec, keptIMCFormat)
	}
	if len(k.Files) > maxKeptIMCFiles {
		return nil, fmt.Errorf("%w: %d files beside cust.cfg, more than %d", ErrBadIMCSpec, len(k.Files), maxKeptIMCFiles)
	}
	for name := range k.Files {
		if checkFileName(name) != nil {
			return nil, fmt.Errorf("%w: a file name that is not a plain file name", ErrBadIMCSpec)
		}
	}
	if k.InstanceID != "" && CheckInstanceID(k.InstanceID) != nil {
		return nil, fmt.Errorf("%w: instance_id is not an instance ID", ErrBadIMCSpec)
	}
	return &k, nil
}

// jsonErrorWhere says where a JSON document is bad, without its text.
func jsonErrorWhere(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("bad JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %s is not a %s", te.Field, te.Type)
	}
	return "bad JSON"
}

// parseKeptIMC reads a kept file into Metadata (instance ID left empty
// when the spec has none). The password is dropped whatever the file
// holds: a kept spec never sets it.
func parseKeptIMC(b []byte, log *slog.Logger) (*Metadata, *keptIMC, error) {
	k, err := decodeKeptIMC(b)
	if err != nil {
		return nil, nil, err
	}
	read := func(name string, limit int) ([]byte, error) {
		f, ok := k.Files[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: the kept spec lacks a file it names", ErrBadIMCSpec)
		case len(f) > limit:
			return nil, fmt.Errorf("%w: a kept file of %d bytes, more than %d", ErrBadIMCSpec, len(f), limit)
		}
		return f, nil
	}
	md, err := parseIMC(k.CustCfg, read, log)
	if err != nil {
		return nil, nil, err
	}
	dropIMCPassword(md)
	spec := md.VMwareIMC
	spec.Kept = true
	liveIMCIdentity(md, k.InstanceID)
	if t, err := time.Parse(time.RFC3339, k.Applied); err == nil {
		spec.AppliedAt = t.UTC().Format(time.RFC3339)
	} else {
		md.warn(log, paths.VMwareIMCSpec+": applied dropped: not an RFC 3339 time")
	}
	md.Origin = Origin{Transport: transportIMC, Items: []string{paths.VMwareIMCSpec}}
	return md, k, nil
}

// liveIMCIdentity gives md, read from a spec applied while the VM ran,
// the instance ID of the boot it was applied in (id; "" leaves md as it
// is).
func liveIMCIdentity(md *Metadata, id string) {
	if id == "" {
		return
	}
	md.InstanceID, md.InstanceIDDefaulted = id, false
	md.VMwareIMC.Live = true
	if md.MetaData != nil {
		md.MetaData["instance-id"] = id
	}
}

// keptIMCFor is the kept spec when it keeps the same customization as
// keep (read from iMCDir) and was applied while the VM ran; nil
// otherwise.
func keptIMCFor(ctx context.Context, root sysroot.Root, keep *keptIMC) *keptIMC {
	id, same := keptSameSpec(ctx, root, keep)
	if !same || id == "" {
		return nil
	}
	c := *keep
	c.InstanceID = id
	return &c
}

// keptSameSpec reports whether the kept file under root keeps the
// customization keep does (the same marker, cust.cfg and files), and the
// instance ID kept with it ("" when none). The instance ID is the
// envelope's last field: read from its tail, the file is then compared
// with the envelope keep makes with it a piece at a time, never decoded
// (at the bounds it is 24 MiB, read while the spec just read is held).
func keptSameSpec(ctx context.Context, root sysroot.Root, keep *keptIMC) (id string, same bool) {
	if keep == nil {
		return "", false
	}
	f, err := fsutil.OpenIn(string(root), paths.VMwareIMCSpec, fsutil.Regular|fsutil.NoFollow)
	if err != nil {
		return "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() > maxKeptIMC {
		return "", false
	}
	id = keptTailInstanceID(f, fi.Size())
	if id != "" && CheckInstanceID(id) != nil {
		return "", false
	}
	c := *keep
	c.InstanceID = id
	env, err := newKeptEnvelope(&c, "0000-00-00T00:00:00Z")
	if err != nil {
		return "", false
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil || !env.sameAsReader(ctx, f, fi.Size()) {
		return "", false
	}
	return id, true
}

// keptFileIs reports whether the kept file under root is env's but for
// the time it was applied, reading it a piece at a time.
func keptFileIs(ctx context.Context, root sysroot.Root, env *keptEnvelope) bool {
	f, err := fsutil.OpenIn(string(root), paths.VMwareIMCSpec, fsutil.Regular|fsutil.NoFollow)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && env.sameAsReader(ctx, f, fi.Size())
}

// keptTailInstanceID is the instance_id at the end of the kept file f of
// size bytes; "" when it has none there.
func keptTailInstanceID(f io.ReaderAt, size int64) string {
	const tail = 1 << 10 // a quoted instance ID of at most 255 bytes, and the key
	off := max(size-tail, 0)
	b := make([]byte, size-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	const key = `,"instance_id":`
	i := bytes.LastIndex(b, []byte(key))
	rest, ok := bytes.CutSuffix(b[max(i, 0)+len(key):], []byte("}\n"))
	if i < 0 || !ok {
		return ""
	}
	var id string
	if json.Unmarshal(rest, &id) != nil {
		return ""
	}
	return id
}

// readKeptIMC reads the kept spec under root: ErrNoSource wrapped when
// there is none.
func readKeptIMC(ctx context.Context, root sysroot.Root, log *slog.Logger) (*Metadata, error) {
	b, err := fsutil.ReadFileInNoFollow(ctx, string(root), paths.VMwareIMCSpec, maxKeptIMC+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: no kept spec %s", ErrNoSource, paths.VMwareIMCSpec)
	case errors.Is(err, fsutil.ErrTooLarge):
		return nil, fmt.Errorf("%s %s: %w: more than %d bytes", paths.VMwareIMCSpec, keptIMCHint, ErrBadIMCSpec, maxKeptIMC)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", paths.VMwareIMCSpec, err)
	}
	md, _, err := parseKeptIMC(b, log)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", paths.VMwareIMCSpec, keptIMCHint, err)
	}
	if err := imcIdentity(md, root, paths.VMwareIMCSpec, log); err != nil {
		return nil, err
	}
	return md, nil
}
