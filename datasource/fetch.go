package datasource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/mdata"
)

// Sources is the detection order: cheap, positive checks first. SmartOS is
// first because its checks (a zone socket, the DMI product name) are the
// most specific; VMware's is the DMI product name; NoCloud's look at the
// command line, the SMBIOS serial, seed directories and disk labels.
var Sources = []string{SourceSmartOS, SourceVMware, SourceNoCloud}

// Options say where and how Fetch looks for metadata.
type Options struct {
	// Root is where system paths are read; the zero value is "/".
	Root sysroot.Root
	// Sources restricts and orders the sources tried; nil means Sources.
	Sources []string
	// MdataTransport forces the mdata transport (SEEDKEEPER_MDATA or the
	// configuration).
	MdataTransport string
	// Mdata tunes the mdata client (timeouts, progress); Logger is
	// filled in from Logger when nil.
	Mdata mdata.Options
	// NoCloud and VMware are passed to those readers; their Root and
	// Logger are filled in.
	NoCloud NoCloudOptions
	VMware  VMwareOptions
	Logger  *slog.Logger
}

// Candidate is one source's detection result.
type Candidate struct {
	Source string `json:"source"`
	Found  bool   `json:"found"`
	Reason string `json:"reason"`
}

func (o *Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Detection is one source's detection result together with what the
// checks found (the mdata transport; NoCloud's ds=nocloud lines and
// labelled devices), so that ReadDetected goes on from there instead of
// looking again.
type Detection struct {
	Candidate
	transport mdata.Transport // SmartOS
	nocloud   *noCloudProbe   // NoCloud, when it looked beyond SeedPath
}

// detect runs the cheap checks of one source. A source that is not here
// is a Detection with Found false and the reason; the error is for checks
// that could not be made.
func detect(source string, o *Options) (Detection, error) {
	switch source {
	case SourceSmartOS:
		d, err := detectSmartOS(o.Root, o.MdataTransport)
		if errors.Is(err, ErrNoSource) {
			err = nil
		}
		return d, err
	case SourceVMware:
		ok, reason := DetectVMware(o.Root)
		if !ok && o.VMware.Getenv != nil && o.VMware.Getenv("VMX_GUESTINFO") != "" {
			ok, reason = true, "VMX_GUESTINFO is set"
		}
		return Detection{Candidate: Candidate{source, ok, reason}}, nil
	case SourceNoCloud:
		no := o.NoCloud
		no.Root = o.Root
		return detectNoCloud(no), nil
	}
	return Detection{}, fmt.Errorf("unknown source %q (want one of %v)", source, Sources)
}

// Detect runs the cheap checks of each source in order and stops at the
// first one found, which it returns with what its checks found. It never
// talks to a metadata host and never opens a serial port. When nothing is
// found the error wraps ErrNoSource; cands has every result either way.
func Detect(o Options) (found Detection, cands []Candidate, err error) {
	order := o.Sources
	if order == nil {
		order = Sources
	}
	for _, s := range order {
		d, err := detect(s, &o)
		if err != nil {
			return Detection{}, cands, err
		}
		cands = append(cands, d.Candidate)
		if d.Found {
			return d, cands, nil
		}
	}
	return Detection{}, cands, ErrNoSource
}

// Fetch detects the source and reads it. Each detection result is logged,
// the winner's and the losers'. When nothing is found the error wraps
// ErrNoSource. An mdata host that was detected is waited for as long as
// ctx allows.
func Fetch(ctx context.Context, o Options) (*Metadata, []Candidate, error) {
	log := o.logger()
	found, cands, err := Detect(o)
	for _, c := range cands {
		if c.Found {
			log.Info("metadata source detected", "source", c.Source, "reason", c.Reason)
		} else {
			log.Info("metadata source not present", "source", c.Source, "reason", c.Reason)
		}
	}
	if err != nil {
		return nil, cands, err
	}
	md, err := ReadDetected(ctx, found, o)
	return md, cands, err
}

// Read reads one named source without detecting it first (the caller
// knows it is there, or asked for it). Each call reads afresh: the hotplug
// re-fetch uses it to see a seed that changed.
func Read(ctx context.Context, source string, o Options) (*Metadata, error) {
	return ReadDetected(ctx, Detection{Candidate: Candidate{Source: source}}, o)
}

// ReadDetected reads the source d names, going on from what its detection
// found (a Detection from Detect); what d lacks is looked up as Read does.
func ReadDetected(ctx context.Context, d Detection, o Options) (*Metadata, error) {
	log := o.logger()
	switch d.Source {
	case SourceSmartOS:
		t := d.transport
		if t == nil {
			sd, err := detectSmartOS(o.Root, o.MdataTransport)
			if err != nil {
				return nil, err
			}
			t = sd.transport
		}
		mo := o.Mdata
		if mo.Logger == nil {
			mo.Logger = log
		}
		c := mdata.New(t, &mo)
		defer c.Close()
		return ReadSmartOS(ctx, c, log)
	case SourceVMware:
		vo := o.VMware
		vo.Root = o.Root
		if vo.Logger == nil {
			vo.Logger = log
		}
		return ReadVMware(ctx, vo)
	case SourceNoCloud:
		no := o.NoCloud
		no.Root = o.Root
		if no.Logger == nil {
			no.Logger = log
		}
		return readNoCloud(ctx, no, d.nocloud)
	}
	return nil, fmt.Errorf("unknown source %q (want one of %v)", d.Source, Sources)
}

// ValidSource reports whether s names a source.
func ValidSource(s string) bool { return slices.Contains(Sources, s) }
