package redact

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw@host/seed/":                    "http://REDACTED@host/seed/",
		"https://host/s/?X-Amz-Signature=abc&t=1#frag": "https://host/s/?REDACTED",
		"https://host/%s?sig=abc":                      "https://host/%s?REDACTED",
		"file:///var/seed/":                            "file:///var/seed/",
		"/var/seed/":                                   "/var/seed/",
		"http:user:pw@host":                            "http:REDACTED",
		"http://[::1":                                  "<unparsable URL>",
		"https://host/path#access_token=abc":           "https://host/path",
		"https://u@host:8080/a?":                       "https://REDACTED@host:8080/a?REDACTED",
	} {
		got := URL(in)
		if got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
		for _, s := range []string{"pw", "abc", "frag", "Signature"} {
			if strings.Contains(in, s) && strings.Contains(got, s) {
				t.Errorf("URL(%q) = %q still holds %q", in, got, s)
			}
		}
	}
}

func TestErrorHidesTheQueryOfAFailedRequest(t *testing.T) {
	// A failed http(s) seedfrom carried the presigned
	// query in the library's error text.
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://127.0.0.1:1/seed/meta-data?token=SECRETMARKER", nil)
	_, err := http.DefaultClient.Do(req)
	if err == nil || !strings.Contains(err.Error(), "SECRETMARKER") {
		t.Fatalf("net/http no longer quotes the URL (%v): this test needs another example", err)
	}
	got := Error(err)
	if strings.Contains(got.Error(), "SECRETMARKER") {
		t.Errorf("Error() = %v, still holds the token", got)
	}
	if !strings.Contains(got.Error(), "127.0.0.1:1/seed/meta-data") {
		t.Errorf("Error() = %v, lost the address", got)
	}
	if errors.Unwrap(got) == nil {
		t.Errorf("Error() does not wrap the cause")
	}
	plain := errors.New("x")
	if Error(plain) != plain {
		t.Errorf("Error changed an error without a URL")
	}
}

func TestValueWalksListsAndURLs(t *testing.T) {
	// Passwords inside lists and the seedfrom
	// user:password under meta_data were shown by fetch.
	in := map[string]any{
		"users": []any{
			map[string]any{"name": "a", "passwd": "SECRETMARKER1"},
			[]any{map[string]any{"plain_text_passwd": "SECRETMARKER2"}},
		},
		"meta_data": map[string]any{"seedfrom": "http://u:SECRETMARKER3@host/s/"},
		"seedfrom":  "https://host/s/?sig=SECRETMARKER4",
		"api_token": map[string]any{"a": "SECRETMARKER5"},
		"hostname":  "web1",
		"n":         3,
	}
	out := Value(in, json.Marshal)
	b, _ := json.Marshal(out)
	if strings.Contains(string(b), "SECRETMARKER") {
		t.Errorf("redacted value still holds a secret: %s", b)
	}
	if !strings.Contains(string(b), `"hostname":"web1"`) || !strings.Contains(string(b), `"n":3`) {
		t.Errorf("redaction dropped plain values: %s", b)
	}
	if !strings.Contains(string(b), "http://REDACTED@host/s/") {
		t.Errorf("seedfrom not shown redacted: %s", b)
	}
	if in["seedfrom"] != "https://host/s/?sig=SECRETMARKER4" {
		t.Errorf("Value changed its input")
	}
}

func TestSummary(t *testing.T) {
	if got := Summary([]byte("abc")); got != "<redacted: 3 bytes, sha256 ba7816bf8f01>" {
		t.Errorf("Summary = %q", got)
	}
}

func FuzzURL(f *testing.F) {
	for _, s := range []string{"http://u:p@h/?q#f", "https://h/%s?x", "http:u:p@h", "//u:p@h/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := URL(s)
		if got == "<unparsable URL>" {
			return
		}
		if strings.Contains(got, "#") {
			t.Fatalf("URL(%q) = %q keeps a fragment", s, got)
		}
		if q := strings.Index(got, "?"); q >= 0 && got[q:] != "?REDACTED" {
			t.Fatalf("URL(%q) = %q keeps a query", s, got)
		}
	})
}
