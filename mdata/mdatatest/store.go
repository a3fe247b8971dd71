package mdatatest

import (
	"slices"
	"strings"
	"sync"
)

// Store holds the metadata of one simulated VM as the host agent sees it:
// customer_metadata, internal_metadata (keys ending in "_pw",
// "operator-script" and keys in an internal namespace) and the read-only
// "sdc:" keys. Values are bytes; every value, including empty ones and
// ones holding NUL or invalid UTF-8, is served unchanged. A Store is safe
// for concurrent use: a test may change it while clients read it.
type Store struct {
	mu         sync.RWMutex
	customer   table
	internal   table
	sdc        table
	namespaces []string
}

// table is one metadata object; like a JavaScript object it remembers the
// order keys were added in, which is the order KEYS lists them.
type table struct {
	order []string
	vals  map[string][]byte
}

func (t *table) get(k string) ([]byte, bool) {
	v, ok := t.vals[k]
	return v, ok
}

func (t *table) set(k string, v []byte) {
	if t.vals == nil {
		t.vals = make(map[string][]byte)
	}
	if _, ok := t.vals[k]; !ok {
		t.order = append(t.order, k)
	}
	t.vals[k] = append([]byte{}, v...)
}

func (t *table) del(k string) {
	if _, ok := t.vals[k]; !ok {
		return
	}
	delete(t.vals, k)
	t.order = slices.DeleteFunc(t.order, func(s string) bool { return s == k })
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{} }

// SetNamespaces sets the VM's internal_metadata_namespaces: keys "ns:..."
// for a listed ns are read from internal metadata, listed by KEYS, and
// refused to guest PUT and DELETE with `Cannot update the "ns" Namespace.`.
// Set namespaces before the keys in them.
func (s *Store) SetNamespaces(ns ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.namespaces = slices.Clone(ns)
}

// Set stores value under key where the host agent keeps it: "sdc:" keys
// in the read-only set (which only the test side can change;
// "sdc:operator-script" is internal_metadata's "operator-script"),
// "_pw" keys, "operator-script" and namespaced keys in internal metadata,
// the rest in customer metadata. Unlike a guest PUT, an empty value is
// allowed.
func (s *Store) Set(key string, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, k := s.writeTable(key)
	t.set(k, value)
}

// SetString is Set with a string value.
func (s *Store) SetString(key, value string) { s.Set(key, []byte(value)) }

// Get returns a copy of the value a guest GET of key would receive, and
// whether there is one. Note an agent.js quirk: "operator-script" is stored
// in internal metadata but a GET of "operator-script" reads customer
// metadata; only "sdc:operator-script" finds it.
func (s *Store) Get(key string) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, k := s.readTable(key)
	v, ok := t.get(k)
	if !ok {
		return nil, false
	}
	return append([]byte{}, v...), true
}

// Delete removes key from where Set would store it. Deleting a missing
// key does nothing.
func (s *Store) Delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, k := s.writeTable(key)
	t.del(k)
}

// Keys returns what KEYS lists: the customer keys (in the order they were
// added), then the internal "_pw" and namespaced keys. "sdc:" keys are
// never listed, nor is operator-script.
func (s *Store) Keys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := []string{}
	for _, k := range s.customer.order {
		if !s.isInternal(k) {
			keys = append(keys, k)
		}
	}
	for _, k := range s.internal.order {
		if s.isInternal(k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// isInternal is agent.js's test for a key KEYS takes from internal
// metadata: a "_pw" suffix or an internal namespace.
func (s *Store) isInternal(k string) bool {
	return strings.HasSuffix(k, "_pw") || s.namespaceOf(k) != ""
}

// namespaceOf returns the internal namespace key belongs to, or "".
func (s *Store) namespaceOf(key string) string {
	prefix, _, ok := strings.Cut(key, ":")
	if ok && slices.Contains(s.namespaces, prefix) {
		return prefix
	}
	return ""
}

// readTable says where a GET of key looks (agent.js GET).
func (s *Store) readTable(key string) (*table, string) {
	if name, ok := strings.CutPrefix(key, "sdc:"); ok {
		if name == "operator-script" {
			return &s.internal, name
		}
		return &s.sdc, key
	}
	if s.isInternal(key) {
		return &s.internal, key
	}
	return &s.customer, key
}

// writeTable says where key is stored (agent.js setMetadata, plus the
// test-only sdc: set).
func (s *Store) writeTable(key string) (*table, string) {
	if strings.HasPrefix(key, "sdc:") {
		return s.readTable(key)
	}
	if key == "operator-script" || s.isInternal(key) {
		return &s.internal, key
	}
	return &s.customer, key
}

// SampleUUID is sdc:uuid in the Default store.
const SampleUUID = "4a1b2c3d-0000-1111-2222-333344445555"

// Default returns a new store with realistic data of a SmartOS KVM
// instance "web01": a primary dual-stack NIC and a second NIC on an
// internal VLAN, a route, resolvers, SSH keys, a user-script and
// cloud-init user-data. It is what the demo and the benchmarks serve.
func Default() *Store {
	s := NewStore()
	for _, kv := range [][2]string{
		{"sdc:uuid", SampleUUID},
		{"sdc:image_uuid", "5e164fac-0000-4a6c-8f7e-6b3a5d1c2e90"},
		{"sdc:server_uuid", "44454c4c-3800-1036-8047-b2c04f4a5331"},
		{"sdc:owner_uuid", "930896af-0000-4f1f-8a3b-2c7d4e5f6a7b"},
		{"sdc:alias", "web01"},
		{"sdc:hostname", "web01"},
		{"sdc:dns_domain", "example.com"},
		{"sdc:datacenter_name", "us-east-1"},
		{"sdc:resolvers", `["192.0.2.53","192.0.2.54"]`},
		{"sdc:routes", `[{"linklocal":false,"dst":"198.51.100.0/24","gateway":"10.88.0.1"}]`},
		{"sdc:nics", sampleNICs},
		{"hostname", "web01"},
		{"root_authorized_keys", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHb7wN0fX4pT3kq0jO2mYcDdS8vRzL9uQe1aW6xKx0Yt admin@example.com\n" +
			"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7mD0xq4Vx1tO9oXgZ8jK2cQ5yH3wR6uP1sN7eL4aB0fT9vM2kJ8hG5dC3xW1zQ6 deploy@example.com"},
		{"user-script", "#!/bin/sh\necho \"user-script ran on $(hostname)\" > /var/tmp/user-script.out\n"},
		{"cloud-init:user-data", "#cloud-config\npackages:\n  - nginx\nruncmd:\n  - [systemctl, enable, --now, nginx]\n"},
	} {
		s.SetString(kv[0], kv[1])
	}
	return s
}

const sampleNICs = `[{"interface":"net0","mac":"90:b8:d0:4a:1b:01","vlan_id":0,"nic_tag":"external",` +
	`"ip":"203.0.113.10","netmask":"255.255.255.0","gateway":"203.0.113.1",` +
	`"ips":["203.0.113.10/24","2001:db8:10::10/64"],"gateways":["203.0.113.1","2001:db8:10::1"],` +
	`"mtu":1500,"primary":true,"model":"virtio"},` +
	`{"interface":"net1","mac":"90:b8:d0:4a:1b:02","vlan_id":88,"nic_tag":"internal",` +
	`"ip":"10.88.0.10","netmask":"255.255.255.0","gateway":"10.88.0.1",` +
	`"ips":["10.88.0.10/24"],"gateways":["10.88.0.1"],"mtu":9000,"model":"virtio"}]`
