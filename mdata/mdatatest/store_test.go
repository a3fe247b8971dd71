package mdatatest

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
)

func TestStoreRouting(t *testing.T) {
	s := NewStore()
	s.SetNamespaces("triton")
	s.SetString("user-script", "u")
	s.SetString("sdc:uuid", SampleUUID)
	s.SetString("root_pw", "pw")
	s.SetString("triton:role", "web")
	s.SetString("operator-script", "op")
	s.SetString("hostname", "h")
	s.SetString("user-script", "u2") // keeps its place in KEYS

	if got, want := s.Keys(), []string{"user-script", "hostname", "root_pw", "triton:role"}; !slices.Equal(got, want) {
		t.Errorf("Keys = %q, want %q", got, want)
	}
	for key, want := range map[string]string{
		"user-script": "u2", "sdc:uuid": SampleUUID, "root_pw": "pw",
		"triton:role": "web", "sdc:operator-script": "op", "hostname": "h",
	} {
		if v, ok := s.Get(key); !ok || string(v) != want {
			t.Errorf("Get(%q) = %q, %v; want %q", key, v, ok, want)
		}
	}
	if _, ok := s.Get("operator-script"); ok {
		t.Error(`Get("operator-script") found it; agent.js reads customer metadata there`)
	}
	s.Delete("sdc:uuid")
	s.Delete("root_pw")
	s.Delete("missing")
	if _, ok := s.Get("sdc:uuid"); ok {
		t.Error("sdc:uuid not deleted")
	}
	if got, want := s.Keys(), []string{"user-script", "hostname", "triton:role"}; !slices.Equal(got, want) {
		t.Errorf("Keys = %q, want %q", got, want)
	}
	// Get returns a copy.
	v, _ := s.Get("hostname")
	v[0] = 'X'
	if v, _ := s.Get("hostname"); string(v) != "h" {
		t.Error("Get returned the stored slice")
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := Default()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				s.SetString("k", string(rune('a'+i)))
				s.Get("k")
				s.Keys()
				if j%10 == 0 {
					s.Delete("k")
				}
			}
		})
	}
	wg.Wait()
}

func TestDefaultStore(t *testing.T) {
	s := Default()
	if v, _ := s.Get("sdc:uuid"); string(v) != SampleUUID {
		t.Errorf("sdc:uuid = %q", v)
	}
	var nics []struct {
		Interface string   `json:"interface"`
		MAC       string   `json:"mac"`
		IPs       []string `json:"ips"`
		Gateways  []string `json:"gateways"`
		Primary   bool     `json:"primary"`
	}
	v, _ := s.Get("sdc:nics")
	if err := json.Unmarshal(v, &nics); err != nil {
		t.Fatalf("sdc:nics: %v", err)
	}
	if len(nics) != 2 || !nics[0].Primary || len(nics[0].IPs) != 2 || len(nics[0].Gateways) != 2 || nics[1].Primary {
		t.Errorf("sdc:nics = %+v; want a primary dual-stack nic and a second nic", nics)
	}
	for _, k := range []string{"sdc:routes", "sdc:resolvers"} {
		v, _ := s.Get(k)
		var x []any
		if err := json.Unmarshal(v, &x); err != nil || len(x) == 0 {
			t.Errorf("%s = %s: %v", k, v, err)
		}
	}
	for _, k := range []string{"sdc:hostname", "hostname", "root_authorized_keys", "user-script",
		"cloud-init:user-data", "sdc:dns_domain", "sdc:datacenter_name"} {
		if v, ok := s.Get(k); !ok || len(v) == 0 {
			t.Errorf("%s missing", k)
		}
	}
	for _, k := range s.Keys() {
		if len(k) > 4 && k[:4] == "sdc:" {
			t.Errorf("KEYS lists %s", k)
		}
	}
}
