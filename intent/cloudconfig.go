package intent

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/pubkey"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// CloudConfig is what of a #cloud-config user-data Apply tracks: the
// settings it applies itself (keys, passwords) and a digest of every
// other top-level key, to say what changed.
type CloudConfig struct {
	// Parsed is false when the user-data is no #cloud-config document
	// (empty, a script, a MIME multipart, not YAML): nothing in it is
	// applied by seedkeeper, and Raw changes wait for a new instance.
	Parsed bool
	// Broken is true for a #cloud-config document that does not decode
	// (not YAML, too complex, not a mapping): what it names is unknown
	// at this boot, which is no change of it.
	Broken bool
	// DefaultUser is the `user:` key (a name, or a mapping's name); ""
	// when it is not set (the image's default user then).
	DefaultUser string
	// Keys is the top-level ssh_authorized_keys, for the default user;
	// KeysPartial is true when an entry of it was dropped as unusable.
	Keys        []string
	KeysPartial bool
	// Users are the `users:` entries that name a user other than
	// "default", with their ssh_authorized_keys.
	Users []User
	// Password is the top-level `password:` (for the default user), and
	// Passwords the chpasswd users and list entries.
	Password  *Password
	Passwords []Password
	// Expire is chpasswd.expire (true unless set false), as cloud-init
	// reads it.
	Expire bool
	// Top holds every other top-level key and the digest of its value
	// (yamlx.Digest: aliases followed, comments and layout left out),
	// for the change digests.
	Top map[string][]byte
	// Warnings name the fields that were left out and why; they never
	// quote the value.
	Warnings []string
}

// User is a `users:` entry.
type User struct {
	Name string
	Keys []string
	// KeysPartial is true when an entry of its keys was dropped.
	KeysPartial bool
}

// Password is a password for a user. User "" is the default user.
type Password struct {
	User   string
	Value  string
	Hashed bool // a crypt(3) hash: set with chpasswd -e
	Random bool // RANDOM or R: cloud-init makes one; never re-made here
}

// hashed is cloud-init's test for a hashed password (cc_set_passwords,
// 22.4 and 25.1): re.match, so anchored at the start only, and no ':'.
var hashed = regexp.MustCompile(`^\$(1|2a|2y|5|6)(\$.+){2}`)

func isHashed(p string) bool { return hashed.MatchString(p) && !strings.Contains(p, ":") }

// Keys seedkeeper reads itself; the rest are digested whole.
var ownKeys = map[string]bool{"user": true, "users": true, "ssh_authorized_keys": true, "password": true, "chpasswd": true}

// ParseCloudConfig reads user-data as cloud-init reads a #cloud-config
// part: a YAML mapping after the header line. The document is bounded
// (yamlx.Unmarshal: its text, and what its aliases expand to) before
// anything is decoded from it; its aliases are then followed where they
// stand, never copied. One bad field is left out with a warning; the
// others are kept.
func ParseCloudConfig(b []byte) CloudConfig {
	cc := CloudConfig{Expire: true, Top: map[string][]byte{}}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.Equal(bytes.TrimRight(first, " \t\r"), []byte("#cloud-config")) {
		return cc
	}
	var doc yaml.Node
	if err := yamlx.Unmarshal(b, &doc); err != nil {
		cc.Warnings = append(cc.Warnings, "user-data: cannot be read as YAML: "+yamlx.Describe(err).Error())
		cc.Broken = true
		return cc
	}
	if len(doc.Content) == 0 {
		cc.Parsed = true
		return cc
	}
	top := deref(doc.Content[0])
	if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
		cc.Parsed = true
		return cc
	}
	if top.Kind != yaml.MappingNode {
		cc.Warnings = append(cc.Warnings, fmt.Sprintf("user-data: the document is %s, want a mapping", yamlx.NodeKind(top)))
		cc.Broken = true
		return cc
	}
	cc.Parsed = true
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := deref(top.Content[i]), deref(top.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			cc.warn("user-data: a key at line %d is %s, want a string", k.Line, yamlx.NodeKind(k))
			continue
		}
		switch key := k.Value; {
		case !ownKeys[key] || key == "user" || key == "users":
			// user and users are read below too: their keys are
			// applied, and a change of the rest waits.
			cc.Top[key] = cc.digestTop(v)
			if key == "user" {
				cc.parseDefaultUser(v)
			} else if key == "users" {
				cc.parseUsers(v)
			}
		case key == "ssh_authorized_keys":
			cc.Keys, cc.KeysPartial = cc.keyList("ssh_authorized_keys", v)
		case key == "password":
			if p, ok := cc.str("password", v); ok {
				cc.Password = newPassword("", p)
			}
		case key == "chpasswd":
			cc.parseChpasswd(v)
		}
	}
	return cc
}

// digestTop is what the change digest of a top-level key is made of: the
// digest of its value, aliases followed, comments and layout left out.
// Nothing of the value is decoded or encoded again: an encoder holds
// every event of what it writes, hundreds of bytes a value.
func (cc *CloudConfig) digestTop(v *yaml.Node) []byte {
	d := yamlx.Digest(v)
	return d[:]
}

// deref is the node an alias stands for, else n itself. An anchored node
// is never an alias, so one step is all there is.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func (cc *CloudConfig) warn(format string, a ...any) {
	cc.Warnings = append(cc.Warnings, fmt.Sprintf(format, a...))
}

// str reads a scalar string field.
func (cc *CloudConfig) str(field string, v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		cc.warn("user-data %s (line %d) dropped: want a string, got %s", field, v.Line, yamlx.NodeKind(v))
		return "", false
	}
	if err := checkText(v.Value); err != nil {
		cc.warn("user-data %s (line %d) dropped: %v", field, v.Line, err)
		return "", false
	}
	return v.Value, true
}

// name reads a user name: a string that could be one in /etc/passwd.
func (cc *CloudConfig) name(field string, v *yaml.Node) (string, bool) {
	s, ok := cc.str(field, v)
	if !ok {
		return "", false
	}
	if err := CheckUserName(s); err != nil {
		cc.warn("user-data %s (line %d) dropped: %v", field, v.Line, err)
		return "", false
	}
	return s, true
}

func (cc *CloudConfig) parseDefaultUser(v *yaml.Node) {
	switch v.Kind {
	case yaml.ScalarNode:
		if n, ok := cc.name("user", v); ok {
			cc.DefaultUser = n
		}
	case yaml.MappingNode:
		if n := mapValue(v, "name"); n != nil {
			if s, ok := cc.name("user.name", n); ok {
				cc.DefaultUser = s
			}
		}
	default:
		cc.warn("user-data user (line %d) dropped: want a name or a mapping, got %s", v.Line, yamlx.NodeKind(v))
	}
}

func (cc *CloudConfig) parseUsers(v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		// cloud-init also takes a comma-separated string or a mapping;
		// their keys are left to cloud-init (users wait for a new
		// instance either way).
		return
	}
	for i, e := range v.Content {
		e := deref(e)
		at := fmt.Sprintf("users[%d]", i)
		switch e.Kind {
		case yaml.ScalarNode:
			if e.Value == "default" {
				continue
			}
			if n, ok := cc.name(at, e); ok {
				cc.Users = append(cc.Users, User{Name: n})
			}
		case yaml.MappingNode:
			nn := mapValue(e, "name")
			if nn == nil {
				cc.warn("user-data %s (line %d) dropped: no name", at, e.Line)
				continue
			}
			n, ok := cc.name(at+".name", nn)
			if !ok || n == "default" {
				continue
			}
			u := User{Name: n}
			if kv := mapValue(e, "ssh_authorized_keys"); kv != nil {
				u.Keys, u.KeysPartial = cc.keyList(at+".ssh_authorized_keys", kv)
			}
			cc.Users = append(cc.Users, u)
		default:
			cc.warn("user-data %s (line %d) dropped: want a name or a mapping, got %s", at, e.Line, yamlx.NodeKind(e))
		}
	}
}

// keyList reads a list of public keys (a single string is one key, as
// cloud-init takes it), filtered as the metadata's keys are; partial is
// true when an entry was dropped.
func (cc *CloudConfig) keyList(field string, v *yaml.Node) (keys []string, partial bool) {
	var raw []string
	var where []int
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag != "!!null" {
			raw, where = []string{v.Value}, []int{v.Line}
		}
	case yaml.SequenceNode:
		for i, e := range v.Content {
			e := deref(e)
			if e.Kind != yaml.ScalarNode || e.Tag == "!!null" {
				cc.warn("user-data %s[%d] (line %d) dropped: want a string, got %s", field, i, e.Line, yamlx.NodeKind(e))
				partial = true
				continue
			}
			raw, where = append(raw, strings.ReplaceAll(e.Value, "\t", " ")), append(where, e.Line)
		}
	default:
		cc.warn("user-data %s (line %d) dropped: want a list of keys, got %s", field, v.Line, yamlx.NodeKind(v))
		return nil, true
	}
	kept, dropped := pubkey.Filter(raw)
	for _, d := range dropped {
		cc.warn("user-data %s key at line %d dropped: %v", field, where[d.Index], d.Err)
	}
	return kept, partial || len(dropped) > 0
}

func (cc *CloudConfig) parseChpasswd(v *yaml.Node) {
	if v.Kind != yaml.MappingNode {
		cc.warn("user-data chpasswd (line %d) dropped: want a mapping, got %s", v.Line, yamlx.NodeKind(v))
		return
	}
	if e := mapValue(v, "expire"); e != nil {
		// cloud-init's translate_bool: true only for these words, any
		// other value (a typo, null) is false.
		switch strings.ToLower(e.Value) {
		case "true", "1", "on", "yes", "y":
			cc.Expire = e.Kind == yaml.ScalarNode
		default:
			cc.Expire = false
		}
	}
	if us := mapValue(v, "users"); us != nil && us.Kind == yaml.SequenceNode {
		for i, e := range us.Content {
			e := deref(e)
			at := fmt.Sprintf("chpasswd.users[%d]", i)
			if e.Kind != yaml.MappingNode {
				cc.warn("user-data %s (line %d) dropped: want a mapping, got %s", at, e.Line, yamlx.NodeKind(e))
				continue
			}
			nn, pn := mapValue(e, "name"), mapValue(e, "password")
			if nn == nil || pn == nil {
				cc.warn("user-data %s (line %d) dropped: want a name and a password", at, e.Line)
				continue
			}
			n, ok := cc.name(at+".name", nn)
			p, ok2 := cc.str(at+".password", pn)
			if !ok || !ok2 {
				continue
			}
			pw := Password{User: n, Value: p}
			typ := "hash"
			if tn := mapValue(e, "type"); tn != nil && tn.Kind == yaml.ScalarNode {
				typ = tn.Value
			}
			switch typ {
			case "text":
			case "RANDOM":
				pw.Random = true
			default:
				pw.Hashed = true
			}
			if pw.Hashed && strings.Contains(pw.Value, ":") {
				cc.warn("user-data %s.password (line %d) dropped: a hash with a ':', which no crypt(3) hash has", at, pn.Line)
				continue
			}
			cc.Passwords = append(cc.Passwords, pw)
		}
	}
	ln := mapValue(v, "list")
	if ln == nil {
		return
	}
	var lines []string
	switch ln.Kind {
	case yaml.ScalarNode:
		lines = strings.Split(ln.Value, "\n")
	case yaml.SequenceNode:
		for _, e := range ln.Content {
			if e := deref(e); e.Kind == yaml.ScalarNode {
				lines = append(lines, e.Value)
			}
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		u, p, ok := strings.Cut(l, ":")
		if !ok || CheckUserName(u) != nil || checkText(p) != nil {
			cc.warn("user-data chpasswd.list entry %d dropped: want user:password", i+1)
			continue
		}
		cc.Passwords = append(cc.Passwords, *newPassword(u, p))
	}
}

func newPassword(user, p string) *Password {
	pw := &Password{User: user, Value: p}
	switch {
	case p == "R" || p == "RANDOM":
		pw.Random = true
	case isHashed(p):
		pw.Hashed = true
	}
	return pw
}

// mapValue returns the value of key in mapping m, nil when absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := deref(m.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return deref(m.Content[i+1])
		}
	}
	return nil
}

// checkText refuses what cannot go on one line of chpasswd's input or of
// a file: a control or line-separator character, invalid UTF-8.
func checkText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for i, r := range s {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("a control character at byte %d", i+1)
		}
	}
	return nil
}

// CheckUserName reports why s cannot be a user name in /etc/passwd: empty,
// longer than 32 bytes, or with a character other than letters, digits,
// '.', '_', '-' (and '$' last, as useradd allows).
func CheckUserName(s string) error {
	if s == "" || len(s) > 32 {
		return fmt.Errorf("a user name of %d bytes, want 1 to 32", len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || (c == '-' && i > 0) || (c == '$' && i == len(s)-1)
		if !ok {
			return fmt.Errorf("byte %d of the user name is not allowed in one", i+1)
		}
	}
	return nil
}

// safeKey is a top-level key as it may appear in a status line: the key
// when it is a plain name, else a description.
func safeKey(k string) string {
	if len(k) <= 64 {
		ok := k != ""
		for i := 0; i < len(k) && ok; i++ {
			c := k[i]
			ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
		}
		if ok {
			return k
		}
	}
	return fmt.Sprintf("(a key of %d bytes)", len(k))
}
