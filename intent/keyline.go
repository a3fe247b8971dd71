package intent

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Key is one authorized_keys entry as sshd reads it: the options before
// the key, its type and its base64 blob; the comment after it is not part
// of what the key is.
type Key struct {
	Options, Type, Blob string
}

// ParseKey reads one authorized_keys line. ok is false for a blank line,
// a comment, or a line with no key type sshd knows the shape of.
func ParseKey(line string) (k Key, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return k, false
	}
	// The type is the first field that looks like one; what is before it
	// is the options (which may hold quoted spaces).
	fields := strings.Fields(line)
	at := 0 // where fields[i] starts in line
	for i, f := range fields {
		at += strings.Index(line[at:], f)
		if isKeyType(f) && i+1 < len(fields) {
			k.Options = strings.TrimSpace(line[:at])
			k.Type, k.Blob = f, fields[i+1]
			return k, true
		}
		at += len(f)
	}
	return k, false
}

// isKeyType reports whether f has the shape of an SSH public key type:
// ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256, sk-ssh-ed25519@openssh.com
// and their certificate forms.
func isKeyType(f string) bool {
	for _, p := range []string{"ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-sha2-"} {
		if strings.HasPrefix(f, p) && len(f) > len(p) {
			return true
		}
	}
	return false
}

// Fingerprint names what a key grants: its options, type and blob, not
// its comment or the spacing between fields. Two lines with the same
// fingerprint are the same authorization.
func (k Key) Fingerprint() string {
	h := sha256.Sum256([]byte(k.Options + "\x00" + k.Type + "\x00" + k.Blob))
	return "sha256:" + hex.EncodeToString(h[:16])
}
