package intent

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Runner runs a command with stdin as its input. Apply sets passwords
// through it; a test hands it a fake that records argv and stdin.
type Runner func(ctx context.Context, argv []string, stdin []byte) error

// ExecRunner runs argv[0] from PATH.
func ExecRunner(ctx context.Context, argv []string, stdin []byte) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		// chpasswd's message names the user and the line number at most;
		// it never echoes the password.
		return fmt.Errorf("%s: %w (%s)", argv[0], err, firstLine(stderr.Bytes()))
	}
	return nil
}

func firstLine(b []byte) string {
	l, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	if len(l) > 200 {
		l = l[:200]
	}
	return string(bytes.ToValidUTF8(l, []byte("?")))
}

// SetPassword sets p as cloud-init's set_passwords does: "user:password"
// on chpasswd's standard input (never on its command line), with -e when
// the password is a crypt(3) hash, and, when expire is set, passwd
// --expire afterwards, for hashed passwords too (cloud-init's
// EXPIRE_APPLIES_TO_HASHED_USERS, 22.4 and 25.1). Under an image root the
// commands get -R ROOT.
func SetPassword(ctx context.Context, run Runner, root sysroot.Root, p Password, expire bool) error {
	if run == nil {
		run = ExecRunner
	}
	// One line of chpasswd's input is "user:password": a user name
	// outside the safe alphabet (a ':' or a line break in it) could make
	// it set another user's password, and chpasswd -e stores a hash as
	// it is, so a ':' in one would shift the fields of /etc/shadow.
	if err := CheckUserName(p.User); err != nil {
		return fmt.Errorf("password: %v; not set", err)
	}
	if err := checkText(p.Value); err != nil {
		return fmt.Errorf("password of %s: %v", p.User, err)
	}
	if p.Hashed && strings.Contains(p.Value, ":") {
		return fmt.Errorf("password of %s: a hash with a ':', which would shift the fields of /etc/shadow; not set", p.User)
	}
	argv := []string{"chpasswd"}
	if p.Hashed {
		argv = append(argv, "-e")
	}
	if !root.IsReal() {
		argv = append(argv, "-R", string(root))
	}
	if err := run(ctx, argv, []byte(p.User+":"+p.Value+"\n")); err != nil {
		return fmt.Errorf("setting the password of %s: %w", p.User, err)
	}
	if !expire {
		return nil
	}
	argv = []string{"passwd", "--expire"}
	if !root.IsReal() {
		argv = append(argv, "-R", string(root))
	}
	if err := run(ctx, append(argv, p.User), nil); err != nil {
		return fmt.Errorf("expiring the password of %s: %w", p.User, err)
	}
	return nil
}
