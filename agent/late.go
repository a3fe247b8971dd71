package agent

import (
	"context"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/nosource"
)

// LastBoot is what the last Boot recorded under root about its source
// in the running boot: the zero Boot when it left no readable record, or
// when its record is from an earlier boot (seedkeeper boot has not run in
// this one, or failed before saving), so that nothing is compared with an
// earlier boot's decision.
func LastBoot(root sysroot.Root) nosource.Boot {
	st, err := ReadStatus(root)
	if err != nil {
		return nosource.Boot{}
	}
	if same, _ := st.ThisBoot(CurrentBootID(root)); !same {
		return nosource.Boot{}
	}
	return nosource.Boot{Ran: true, At: st.Time, Outcome: st.Outcome, Source: st.Source, Transport: st.Transport}
}

// LateSource says whether a metadata source appeared after boot decided:
// what Watch recorded in this boot, else what detection finds now ("" when
// there is none).
func LateSource(e Env) string {
	e.init()
	if msg, err := nosource.ReadLate(e.Root); err != nil || msg != "" {
		if err != nil {
			return err.Error()
		}
		return msg
	}
	found, _, err := datasource.Detect(context.Background(), e.SourceOptions())
	if err != nil {
		return ""
	}
	msg, _ := nosource.Late(LastBoot(e.Root), nosource.Found{Source: found.Source})
	return msg
}

// lateCheck reports whether what a reader found (md, else the detected
// source) is a source the last boot did not decide on, and records it for
// "seedkeeper status" when it is.
func (e *Env) lateCheck(decided nosource.Boot, md *datasource.Metadata, source string) (string, bool) {
	f := nosource.Found{Source: source}
	if md != nil {
		f = nosource.Found{Source: md.Source, Transport: md.Origin.Transport}
	}
	msg, late := nosource.Late(decided, f)
	if late {
		if err := nosource.RecordLate(e.Root, msg); err != nil {
			e.Log.Warn("watch", "err", err)
		}
	}
	return msg, late
}
