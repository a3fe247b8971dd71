package datasource

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/mdata"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// KeyNetworkDrivers is the metadata key that sets the hotplug driver
// allowlist on platforms other than VMware.
const KeyNetworkDrivers = "seedkeeper:network-drivers"

// smartosKeys are the keys read at boot, in the order cloud-init's SmartOS
// datasource asks for them (so the host sees the same sequence), plus our
// own allowlist key.
var smartosKeys = []string{
	"sdc:uuid", "hostname", "root_authorized_keys", "user-script", "user-data",
	"cloud-init:user-data", "sdc:datacenter_name", "sdc:vendor-data",
	"sdc:operator-script", "sdc:hostname", "sdc:dns_domain", "sdc:nics",
	"sdc:resolvers", "sdc:routes", KeyNetworkDrivers,
}

// noBase64 are the keys never base64-decoded, whatever base64_all says:
// cloud-init's NO_BASE64_DECODE list as it was meant to be (a missing comma
// in it joins "sdc:uuid" and "user-data" into one name).
var noBase64 = []string{
	"iptables_disable", "motd_sys_info", "root_authorized_keys",
	"sdc:datacenter_name", "sdc:uuid", "user-data", "user-script",
}

// smartOS is the SmartOS/Triton source: mdata over a zone socket, a
// serial port or vsock.
var smartOS = Source{
	Name:       SourceSmartOS,
	Platforms:  []string{"smartos"},
	Drivers:    []string{"virtio_net", "e1000", "e1000e", "vmxnet3"},
	DriversKey: KeyNetworkDrivers,
	// sdc:nics is SmartOS's own format: cloud-init gets it as v1.
	RawNetwork: false,
	detect:     func(ctx context.Context, o *Options) (Detection, error) { return detectSmartOS(ctx, *o) },
	read:       readSmartOS,
	duties:     smartOSDuties,
}

// detectSmartOS reports whether this machine is a SmartOS/Triton guest and
// how to reach its metadata host (Detection.Transport), without talking to
// it. o.MdataTransport, an explicit transport from the environment or the
// configuration, alone decides when set. LX zones are recognised by their
// socket (and uname -v "BrandZ virtual linux"), KVM and bhyve guests by
// the DMI product name under o.Root. When there is no transport the
// Detection says why; the error is for checks that could not be made.
func detectSmartOS(ctx context.Context, o Options) (Detection, error) {
	d := Detection{Candidate: Candidate{Source: SourceSmartOS}}
	if err := ctx.Err(); err != nil {
		return d, err
	}
	t, reason, err := mdata.Detect(o.Root, o.MdataTransport)
	if err != nil {
		if errors.Is(err, mdata.ErrNoTransport) {
			d.Reason = err.Error()
			return d, nil
		}
		return d, err
	}
	if sysroot.Root(o.Root).IsReal() && isBrandZ() {
		reason += " (uname -v: BrandZ virtual linux)"
	}
	d.Found, d.Reason, d.transport = true, reason, t
	return d, nil
}

// readSmartOS reads the instance's metadata in one mdata session: through
// o.MdataClient when set, else through a client it opens on the transport
// d found, or detectSmartOS finds when d has none (and closes it). Values
// come back byte for byte; the optional base64 encoding the metadata can
// ask for (base64_all, base64_keys, b64-KEY) is undone for customer keys
// only, as documented for the SmartOS datasource. A cancelled ctx ends the read with ctx's
// error; a host that does not answer is waited for as long as ctx allows.
// When there is no transport the error wraps ErrNoSource.
func readSmartOS(ctx context.Context, d Detection, o *Options) (*Metadata, error) {
	log := o.logger()
	c := o.MdataClient
	if c == nil {
		t := d.transport
		if t == nil {
			sd, err := detectSmartOS(ctx, *o)
			if err != nil {
				return nil, err
			}
			if !sd.Found {
				return nil, fmt.Errorf("smartos: %w: %s", ErrNoSource, sd.Reason)
			}
			t = sd.transport
		}
		mo := o.Mdata
		if mo.Logger == nil {
			mo.Logger = log
		}
		c = mdata.New(t, &mo)
		defer c.Close()
	}
	return readSmartOSClient(ctx, c, log)
}

// readSmartOSClient reads the metadata through c.
func readSmartOSClient(ctx context.Context, c *mdata.Client, log *slog.Logger) (*Metadata, error) {
	r := smartosReader{ctx: ctx, c: c, log: log, vals: map[string][]byte{}}
	for _, k := range smartosKeys {
		if err := r.fetch(k); err != nil {
			return nil, err
		}
	}

	md := &Metadata{
		Source: SourceSmartOS,
		Origin: Origin{Transport: c.Transport().String(), Items: r.found},
	}
	md.InstanceID = r.str("sdc:uuid")
	if md.InstanceID == "" {
		return nil, fmt.Errorf("smartos: the host has no sdc:uuid")
	}
	// sdc:uuid is both the instance and the machine identity: there is
	// no default to fall back on.
	if err := CheckInstanceID(md.InstanceID); err != nil {
		return nil, fmt.Errorf("smartos: sdc:uuid: %w", err)
	}
	md.MachineID = strings.ToLower(md.InstanceID)
	md.setHostname(log, "hostname", firstNonEmpty(r.str("hostname"), r.str("sdc:hostname"), md.InstanceID))
	var keys, where []string
	for i, l := range strings.Split(r.str("root_authorized_keys"), "\n") {
		// The value is an authorized_keys file: a "#" line is a comment,
		// and space around a line (a trailing TAB too) is not part of
		// the key.
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			keys = append(keys, l)
			where = append(where, fmt.Sprintf("root_authorized_keys line %d", i+1))
		}
	}
	md.setPublicKeys(log, keys, where)
	md.UserData = r.vals["cloud-init:user-data"]
	md.VendorData = r.vals["sdc:vendor-data"]

	ex := &SmartOSExtras{
		AvailabilityZone: r.str("sdc:datacenter_name"),
		DNSDomain:        r.str("sdc:dns_domain"),
	}
	ex.UserScript, ex.HasUserScript = r.vals["user-script"]
	ex.OperatorScript, ex.HasOperator = r.vals["sdc:operator-script"]
	ex.LegacyUserData, ex.HasLegacyUser = r.vals["user-data"]
	md.SmartOS = ex

	if nics, ok := r.vals["sdc:nics"]; ok {
		cfg, err := netcfg.FromSmartOS(nics, r.vals["sdc:routes"], r.vals["sdc:resolvers"], ex.DNSDomain)
		if err != nil {
			md.warn(log, fmt.Sprintf("sdc:nics dropped, leaving the network alone: %v", err))
		}
		md.Network = cfg
		md.networkNotes(log, "")
	}
	if v, ok := r.vals[KeyNetworkDrivers]; ok {
		md.NetworkDriversSet = true
		// NetworkDriversError looks for the value under the model's
		// name for the setting; without it a malformed list would
		// allow nothing without saying why.
		md.MetaData = map[string]any{"network-drivers": string(v)}
		drivers, err := parseNetworkDrivers(string(v))
		if err != nil {
			log.Warn("metadata key has a malformed driver list; hotplug will allow no driver",
				"key", KeyNetworkDrivers, "err", err)
		}
		md.NetworkDrivers = drivers
	}
	return md, nil
}

type smartosReader struct {
	ctx   context.Context
	c     *mdata.Client
	log   *slog.Logger
	vals  map[string][]byte
	found []string

	total int // bytes of the values read so far

	keys     []string // customer keys, read once when decoding is first needed
	keysRead bool
	b64All   bool
	b64Keys  []string
}

func (r *smartosReader) fetch(key string) error {
	v, err := r.c.Get(r.ctx, key)
	if errors.Is(err, mdata.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("smartos: reading %s: %w", key, err)
	}
	if err := r.spend(key, len(v)); err != nil {
		return err
	}
	if err := r.decode(key, &v); err != nil {
		return err
	}
	r.vals[key] = v
	r.found = append(r.found, key)
	return nil
}

// spend counts n bytes of key's value against MaxSmartOSTotal.
func (r *smartosReader) spend(key string, n int) error {
	r.total += n
	if r.total > MaxSmartOSTotal {
		return fmt.Errorf("smartos: reading %s: the values read add up to more than the %d byte limit for one read (%s is %d bytes, %d before it)",
			key, MaxSmartOSTotal, key, n, r.total-n)
	}
	return nil
}

// decode undoes the optional base64 encoding of a customer key's value.
func (r *smartosReader) decode(key string, v *[]byte) error {
	if strings.HasPrefix(key, "sdc:") || slices.Contains(noBase64, key) || key == KeyNetworkDrivers {
		return nil
	}
	if !r.keysRead {
		if err := r.readFlags(); err != nil {
			return err
		}
	}
	want := r.b64All || slices.Contains(r.b64Keys, key)
	if !want && slices.Contains(r.keys, "b64-"+key) {
		flag, err := r.c.Get(r.ctx, "b64-"+key)
		if err != nil && !errors.Is(err, mdata.ErrNotFound) {
			return fmt.Errorf("smartos: reading b64-%s: %w", key, err)
		}
		if err := r.spend("b64-"+key, len(flag)); err != nil {
			return err
		}
		want = isTrue(flag)
	}
	if !want {
		return nil
	}
	dec, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(*v)))
	if err != nil {
		r.log.Warn("value marked base64 is not valid base64; keeping it as it is", "key", key, "err", err)
		return nil
	}
	*v = dec
	return nil
}

// readFlags lists the keys once and reads base64_all and base64_keys when
// they exist, as cloud-init does on its first GET.
func (r *smartosReader) readFlags() error {
	r.keysRead = true
	keys, err := r.c.Keys(r.ctx)
	if err != nil && !errors.Is(err, mdata.ErrNotFound) {
		return fmt.Errorf("smartos: listing keys: %w", err)
	}
	n := 0
	for _, k := range keys {
		n += len(k) + 1
	}
	if err := r.spend("the key list", n); err != nil {
		return err
	}
	r.keys = keys
	if slices.Contains(keys, "base64_all") {
		v, err := r.c.Get(r.ctx, "base64_all")
		if err != nil && !errors.Is(err, mdata.ErrNotFound) {
			return fmt.Errorf("smartos: reading base64_all: %w", err)
		}
		if err := r.spend("base64_all", len(v)); err != nil {
			return err
		}
		r.b64All = isTrue(v)
	}
	if !r.b64All && slices.Contains(keys, "base64_keys") {
		v, err := r.c.Get(r.ctx, "base64_keys")
		if err != nil && !errors.Is(err, mdata.ErrNotFound) {
			return fmt.Errorf("smartos: reading base64_keys: %w", err)
		}
		if err := r.spend("base64_keys", len(v)); err != nil {
			return err
		}
		for _, k := range strings.Split(string(v), ",") {
			if k = strings.TrimSpace(k); k != "" {
				r.b64Keys = append(r.b64Keys, k)
			}
		}
	}
	return nil
}

func (r *smartosReader) str(key string) string { return strings.TrimSpace(string(r.vals[key])) }

// isTrue follows cloud-init's util.is_true.
func isTrue(v []byte) bool {
	switch strings.ToLower(strings.TrimSpace(string(v))) {
	case "true", "1", "on", "yes":
		return true
	}
	return false
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func isBrandZ() bool {
	b, err := fsutil.ReadFile(context.Background(), "/proc/sys/kernel/version", fsutil.TinyFile)
	return err == nil && strings.Contains(string(b), "BrandZ virtual linux")
}
