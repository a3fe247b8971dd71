package intent

import (
	"strings"
	"testing"

	"github.com/seedkeeper/seedkeeper/internal/pubkey"
)

func TestParseCloudConfigProxmox(t *testing.T) {
	cc := ParseCloudConfig(proxmoxUserData("vm101", hash1, true, keyA, keyB))
	if !cc.Parsed || cc.DefaultUser != "admin" || len(cc.Keys) != 2 || cc.Expire {
		t.Errorf("parsed %v user %q keys %d expire %v", cc.Parsed, cc.DefaultUser, len(cc.Keys), cc.Expire)
	}
	if p := cc.Password; p == nil || !p.Hashed || p.Value != hash1 {
		t.Errorf("password %+v, want the hash", p)
	}
	for _, k := range []string{"hostname", "fqdn", "manage_etc_hosts", "package_upgrade", "user", "users"} {
		if _, ok := cc.Top[k]; !ok {
			t.Errorf("top-level %s not kept for its digest", k)
		}
	}
	if len(cc.Warnings) != 0 {
		t.Errorf("warnings %q", cc.Warnings)
	}
}

// One bad field is left out with a warning that says where and never
// quotes it; the fields beside it are kept.
func TestParseCloudConfigBadFields(t *testing.T) {
	ud := "#cloud-config\n" +
		"user: [not, a, name]\n" +
		"ssh_authorized_keys:\n  - " + keyA + "\n  - {secret-map: 1}\n  - \"ssh-ed25519 AAAA\\nroot-injected\"\n" +
		"password: \"pw\\nroot:x\"\n" +
		"users:\n  - default\n  - name: \"bad/name\"\n  - name: ops\n    ssh_authorized_keys: [" + keyB + "]\n" +
		"chpasswd:\n  expire: false\n  users:\n    - {name: ops, password: opspw, type: text}\n    - name: nopw\n    - {name: ops2, password: \"$6$salt$shifted:0:0\"}\n" +
		"runcmd: [echo hi]\n"
	cc := ParseCloudConfig([]byte(ud))
	if !cc.Parsed || cc.DefaultUser != "" || cc.Password != nil || cc.Expire {
		t.Errorf("parsed %v user %q password %v expire %v", cc.Parsed, cc.DefaultUser, cc.Password, cc.Expire)
	}
	if len(cc.Keys) != 1 || cc.Keys[0] != keyA {
		t.Errorf("keys %q, want only the good one", cc.Keys)
	}
	if len(cc.Users) != 1 || cc.Users[0].Name != "ops" || len(cc.Users[0].Keys) != 1 {
		t.Errorf("users %+v", cc.Users)
	}
	if len(cc.Passwords) != 1 || cc.Passwords[0].User != "ops" || cc.Passwords[0].Hashed {
		t.Errorf("chpasswd users %+v", cc.Passwords)
	}
	if _, ok := cc.Top["runcmd"]; !ok {
		t.Error("runcmd not kept")
	}
	all := strings.Join(cc.Warnings, "\n")
	for _, want := range []string{"user (line 2)", "ssh_authorized_keys[1]", "password (line 7)", "users[1].name", "chpasswd.users[1]", "chpasswd.users[2].password"} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning about %s in:\n%s", want, all)
		}
	}
	for _, secret := range []string{"root-injected", "root:x", "secret-map", "bad/name", "shifted"} {
		if strings.Contains(all, secret) {
			t.Errorf("a warning quotes the input (%s):\n%s", secret, all)
		}
	}
}

func TestParseCloudConfigNotCloudConfig(t *testing.T) {
	for _, ud := range []string{"", "#!/bin/sh\necho hi\n", "Content-Type: multipart/mixed; boundary=x\n", "#cloud-config\n: [\n", "#cloud-config\n- a list\n"} {
		cc := ParseCloudConfig([]byte(ud))
		if len(cc.Keys) != 0 || cc.Password != nil || len(cc.Top) != 0 {
			t.Errorf("%q: read %+v", ud, cc)
		}
		if strings.HasPrefix(ud, "#cloud-config") && (cc.Parsed || len(cc.Warnings) != 1) {
			t.Errorf("%q: parsed %v, warnings %q; want one warning", ud, cc.Parsed, cc.Warnings)
		}
	}
	// Aliases that expand beyond the bound are refused before the walk.
	var b strings.Builder
	b.WriteString("#cloud-config\na: &a [" + strings.Repeat("x", 1000) + "]\n")
	prev := "a"
	for i := 0; i < 14; i++ {
		n := string(rune('b' + i))
		b.WriteString(n + ": &" + n + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n")
		prev = n
	}
	if cc := ParseCloudConfig([]byte(b.String())); cc.Parsed || len(cc.Warnings) != 1 {
		t.Errorf("alias bomb: parsed %v, warnings %q", cc.Parsed, cc.Warnings)
	}
}

// FuzzParseCloudConfig: whatever the user-data, what comes out can be
// written where Apply writes it: keys pass the metadata's key filter,
// names are user names, passwords are one line.
func FuzzParseCloudConfig(f *testing.F) {
	f.Add(string(proxmoxUserData("vm101", hash1, true, keyA, keyB)))
	f.Add("#cloud-config\nusers:\n  - default\n  - name: ops\n    ssh_authorized_keys: [" + keyB + "]\nchpasswd:\n  list: |\n    ops:pw\n    root:RANDOM\n")
	f.Add("#cloud-config\nchpasswd: {expire: off, users: [{name: a, password: b, type: RANDOM}]}\npassword: R\n")
	f.Add("#cloud-config\nuser: {name: admin}\nssh_authorized_keys: ssh-rsa AAAA one-key\n")
	f.Add("#cloud-config\na: &x [1, 2]\nb: *x\n")
	f.Add("#!/bin/sh\n")
	f.Fuzz(func(t *testing.T, ud string) {
		cc := ParseCloudConfig([]byte(ud))
		check := func(keys []string) {
			if kept, dropped := pubkey.Filter(keys); len(dropped) != 0 || len(kept) != len(keys) {
				t.Fatalf("a key the filter drops: %q", keys)
			}
		}
		check(cc.Keys)
		if cc.DefaultUser != "" && CheckUserName(cc.DefaultUser) != nil {
			t.Fatalf("default user %q", cc.DefaultUser)
		}
		for _, u := range cc.Users {
			if CheckUserName(u.Name) != nil {
				t.Fatalf("user %q", u.Name)
			}
			check(u.Keys)
		}
		pws := cc.Passwords
		if cc.Password != nil {
			pws = append(pws, *cc.Password)
		}
		for _, p := range pws {
			if checkText(p.Value) != nil || (p.User != "" && CheckUserName(p.User) != nil) {
				t.Fatalf("password entry %+v", p)
			}
		}
		if !cc.Parsed && (len(cc.Keys) > 0 || len(cc.Top) > 0) {
			t.Fatal("values from a document that did not parse")
		}
	})
}
