// Package redact hides what in metadata may be a secret before it reaches a
// message, a log or an output: the one URL redactor every message uses, the
// redaction of passwords in meta-data (lists included), and the summary that
// stands for a hidden value.
package redact

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// URL returns u without what may be a secret: the user information
// (user:password), the query (presigned tokens) and the fragment. A query
// or user information that was there is shown as "REDACTED", so a reader
// still sees that the URL had one. Text that is not a URL is returned as
// "<unparsable URL>". Every URL in a message goes through URL.
func URL(u string) string {
	// A seedfrom base holds "%s" where the file name goes; keep it.
	const pctS = "SEEDKEEPERPCTS"
	p, err := url.Parse(strings.ReplaceAll(u, "%s", pctS))
	if err != nil {
		return "<unparsable URL>"
	}
	if p.User != nil {
		p.User = url.User("REDACTED")
	}
	if p.RawQuery != "" || p.ForceQuery {
		p.RawQuery, p.ForceQuery = "REDACTED", false
	}
	p.Fragment, p.RawFragment = "", ""
	if p.Opaque != "" {
		// "http:user:pass@host" parses with everything opaque.
		return p.Scheme + ":REDACTED"
	}
	return strings.ReplaceAll(p.String(), pctS, "%s")
}

// Error returns err with the URL of any *url.Error in it redacted: the
// errors of net/http name the whole URL, query included.
func Error(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &redactedURLError{op: ue.Op, url: URL(ue.URL), err: ue.Err}
}

type redactedURLError struct {
	op, url string
	err     error
}

func (e *redactedURLError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.op, e.url, e.err)
}

func (e *redactedURLError) Unwrap() error { return e.err }

// Summary stands for a hidden value: its size and a short hash, so a
// person can still tell whether it changed.
func Summary(b []byte) string {
	sum := sha256.Sum256(b)
	return fmt.Sprintf("<redacted: %d bytes, sha256 %x>", len(b), sum[:6])
}

// passwordLike matches keys whose value is a secret.
var passwordLike = regexp.MustCompile(`(?i)(pass|secret|token|_pw$|private|credential)`)

// SecretKey reports whether a meta-data key names a secret.
func SecretKey(k string) bool { return passwordLike.MatchString(k) }

// Value returns a copy of v, a decoded YAML or JSON value, with secrets
// hidden: the value of any key that names a secret is replaced by a
// Summary of its JSON form (encode is how it is encoded), and every string
// that is a URL with user information or a query goes through URL. It
// walks mappings and lists to any depth.
func Value(v any, encode func(any) ([]byte, error)) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if SecretKey(k) {
				b, err := encode(e)
				if err != nil {
					b = []byte(fmt.Sprint(e))
				}
				out[k] = Summary(b)
				continue
			}
			out[k] = Value(e, encode)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Value(e, encode)
		}
		return out
	case string:
		if looksLikeSecretURL(t) {
			return URL(t)
		}
	}
	return v
}

// looksLikeSecretURL reports whether s is a URL carrying user information,
// a query or a fragment.
func looksLikeSecretURL(s string) bool {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, " \t\n/") {
		return false
	}
	host, _, _ := strings.Cut(rest, "/")
	return strings.Contains(host, "@") || strings.ContainsAny(rest, "?#")
}
