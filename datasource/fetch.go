package datasource

import (
	"context"
	"log/slog"

	"github.com/seedkeeper/seedkeeper/mdata"
)

// Options say where and how the sources are detected and read. The same
// value serves Fetch, Detect and every source's own Detect and Read
// functions (detectSmartOS, readNoCloud, ...), which use the fields that
// concern them.
type Options struct {
	// Root is the directory under which system paths (/proc, /sys, /dev,
	// the seed directories) are read; "" and "/" are this machine.
	Root string
	// Sources restricts and orders the sources Detect and Fetch try; nil
	// means Names().
	Sources []string
	// MdataTransport forces the mdata transport (SEEDKEEPER_MDATA or the
	// configuration).
	MdataTransport string
	// MdataClient, when set, is the mdata session SmartOS is read
	// through, which the reader leaves open (a daemon holds one for its
	// life); otherwise the reader opens one on the transport detection
	// found and closes it after the read.
	MdataClient *mdata.Client
	// Mdata tunes the mdata client the reader opens (timeouts,
	// progress); its Logger is filled in from Logger when nil.
	Mdata mdata.Options
	// NoCloud and VMware are the options of those sources.
	NoCloud NoCloudOptions
	VMware  VMwareOptions
	// Logger receives one line per decision; nil discards them. Values
	// are never logged.
	Logger *slog.Logger
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

// Transport is the mdata transport SmartOS detection found; nil for
// other sources and when nothing was found.
func (d Detection) Transport() mdata.Transport { return d.transport }

// Detect runs the cheap checks of each source in order and stops at the
// first one found, which it returns with what its checks found. It never
// talks to a metadata host and never opens a serial port. When nothing is
// found the error wraps ErrNoSource; cands has every result either way.
// A cancelled ctx ends it with ctx's error.
func Detect(ctx context.Context, o Options) (found Detection, cands []Candidate, err error) {
	order := o.Sources
	if order == nil {
		order = Names()
	}
	for _, name := range order {
		if err := ctx.Err(); err != nil {
			return Detection{}, cands, err
		}
		s, err := lookup(name)
		if err != nil {
			return Detection{}, cands, err
		}
		d, err := s.detect(ctx, &o)
		if err != nil {
			return Detection{}, cands, err
		}
		d.Source = s.Name
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
	found, cands, err := Detect(ctx, o)
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
	s, err := lookup(d.Source)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.read(ctx, d, &o)
}
