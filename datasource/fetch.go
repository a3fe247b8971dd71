package datasource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

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

// Detect runs the cheap checks of each source in order and stops at the
// first one found. It never talks to a metadata host and never opens a
// serial port.
func Detect(o Options) (winner string, cands []Candidate, err error) {
	order := o.Sources
	if order == nil {
		order = Sources
	}
	for _, s := range order {
		var c Candidate
		switch s {
		case SourceSmartOS:
			_, reason, err := DetectSmartOS(o.Root, o.MdataTransport)
			if err != nil && !errors.Is(err, ErrNoSource) {
				return "", cands, err
			}
			c = Candidate{s, err == nil, reason}
			if err != nil {
				c.Reason = strings.TrimPrefix(err.Error(), ErrNoSource.Error()+": ")
			}
		case SourceVMware:
			ok, reason := DetectVMware(o.Root)
			if !ok && o.VMware.Getenv != nil && o.VMware.Getenv("VMX_GUESTINFO") != "" {
				ok, reason = true, "VMX_GUESTINFO is set"
			}
			c = Candidate{s, ok, reason}
		case SourceNoCloud:
			no := o.NoCloud
			no.Root = o.Root
			ok, reason := DetectNoCloud(no)
			c = Candidate{s, ok, reason}
		default:
			return "", cands, fmt.Errorf("unknown source %q (want one of %v)", s, Sources)
		}
		cands = append(cands, c)
		if c.Found {
			return s, cands, nil
		}
	}
	return "", cands, ErrNoSource
}

// Fetch detects the source and reads it. Each detection result is logged,
// the winner's and the losers'. When nothing is found the error wraps
// ErrNoSource. An mdata host that was detected is waited for as long as
// ctx allows.
func Fetch(ctx context.Context, o Options) (*Metadata, []Candidate, error) {
	log := o.logger()
	winner, cands, err := Detect(o)
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
	md, err := Read(ctx, winner, o)
	return md, cands, err
}

// Read reads one named source without detecting it first (the caller
// knows it is there, or asked for it).
func Read(ctx context.Context, source string, o Options) (*Metadata, error) {
	log := o.logger()
	switch source {
	case SourceSmartOS:
		t, _, err := DetectSmartOS(o.Root, o.MdataTransport)
		if err != nil {
			return nil, err
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
		if vo.Log == nil {
			vo.Log = log
		}
		return ReadVMware(ctx, vo)
	case SourceNoCloud:
		no := o.NoCloud
		no.Root = o.Root
		if no.Logger == nil {
			no.Logger = log
		}
		return ReadNoCloud(ctx, no)
	}
	return nil, fmt.Errorf("unknown source %q (want one of %v)", source, Sources)
}

// ValidSource reports whether s names a source.
func ValidSource(s string) bool { return slices.Contains(Sources, s) }
