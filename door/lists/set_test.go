package lists

import (
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestFilterNeverAbsentForMember: over random ids of random lengths, the
// node's filter answers Maybe for every member; non-members are Absent
// but for rare false positives.
func TestFilterNeverAbsentForMember(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx, s := ctxOf(t), NewStore(rdb)
	r := rand.New(rand.NewPCG(1, uint64(len(t.Name()))))
	members := make([]string, 60_000)
	for i := range members {
		b := make([]byte, 1+r.IntN(40))
		for j := range b {
			b[j] = byte(0x21 + r.IntN(0x5d))
		}
		members[i] = strings.ReplaceAll(strings.ReplaceAll(string(b), `"`, "q"), ",", "c")
	}
	newList(t, s, "rand", KindUser, members)
	view := NewSet(s)
	if err := view.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range members {
		if view.User("rand", u) != door.Maybe {
			t.Fatalf("member %q answered Absent", u)
		}
	}
	fp := 0
	for i := range 200_000 {
		if view.User("rand", "outsider-"+strconv.Itoa(i)) != door.Absent {
			fp++
		}
	}
	if fp > 40 { // 16-bit fingerprints: about 3 expected
		t.Fatalf("%d false positives in 200,000 non-members", fp)
	}
	if view.User("nope", members[0]) != door.Absent || view.Addr("rand", netip.MustParseAddr("10.0.0.1")) != door.Absent {
		t.Fatal("an unknown list, or a list of ids asked for an address, is not Absent")
	}
	if view.Hash(members[0]) != s.Hash(members[0]) {
		t.Fatal("the view's Hash is not the store's")
	}
}

// TestNodesShareTheHashKey: two stores over one Redis make the same
// hashes (the key is made once, SET NX), and the hash is keyed (not
// FNV nor an unkeyed SipHash).
func TestNodesShareTheHashKey(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := ctxOf(t)
	a, b := NewStore(rdb), NewStore(rdb)
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Hash("alice") != b.Hash("alice") || a.Hash("alice") == a.Hash("bob") {
		t.Fatal("two nodes hash differently")
	}
	other := NewStore(testenv.StartRedis(t).Client(t))
	if err := other.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if other.Hash("alice") == a.Hash("alice") || a.Hash("alice") == sipHash(0, 0, "alice") {
		t.Fatal("the hash is not keyed per deployment")
	}
}

// TestExportNetworksRoundTrip: networks are normalised (masked, IPv4-mapped
// as IPv4, an address as /32 or /128), exported as CIDRs that load back
// to the same list, and the node's table answers exactly.
func TestExportNetworksRoundTrip(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx, s := ctxOf(t), NewStore(rdb)
	if _, err := s.Create(ctx, "nets", KindNetwork); err != nil {
		t.Fatal(err)
	}
	in := "network\n10.1.2.3/8\n192.168.1.7\n::ffff:172.16.5.4/108\n2001:db8::1/32\n2001:db8::5\n240.0.0.0/4\n10.0.0.0/8\n"
	res, err := s.Load(ctx, "nets", strings.NewReader(in), LoadOptions{})
	if err != nil || res.Meta.Count != 6 || res.Duplicates != 1 {
		t.Fatalf("load: %+v, %v, want 6 networks and 1 duplicate", res, err)
	}
	exp := export(t, s, "nets")
	got := strings.Fields(exp)
	want := []string{"10.0.0.0/8", "192.168.1.7/32", "172.16.0.0/12", "2001:db8::/32", "2001:db8::5/128", "240.0.0.0/4"}
	for _, w := range want {
		if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
			t.Errorf("export %q lacks %s", got, w)
		}
	}
	if _, err := s.Create(ctx, "again", KindNetwork); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "again", strings.NewReader(exp), LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if again := export(t, s, "again"); again != exp {
		t.Fatalf("round trip: %q, want %q", again, exp)
	}
	view := NewSet(s)
	if err := view.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]door.Membership{
		"10.255.255.255": door.Present, "11.0.0.0": door.Absent, "127.0.0.1": door.Absent, "1.2.3.4": door.Absent, "250.1.2.3": door.Present,
		"192.168.1.7": door.Present, "192.168.1.8": door.Absent, "::ffff:192.168.1.7": door.Present,
		"172.31.255.255": door.Present, "172.32.0.0": door.Absent,
		"2001:db8:ffff::1": door.Present, "2001:db9::": door.Absent, "2001:db8::5": door.Present, "::1": door.Absent,
	} {
		if got := view.Addr("nets", netip.MustParseAddr(addr)); got != want {
			t.Errorf("Addr(%s) = %v, want %v", addr, got, want)
		}
	}
	if view.User("nets", "10.0.0.1") != door.Absent {
		t.Error("a network list asked for a user is not Absent")
	}
}

// TestNetTableMatchesBruteForce: the range table (merging overlapping and
// adjacent networks) answers as a scan of the networks does.
func TestNetTableMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	var ps []netip.Prefix
	for range 300 {
		if r.IntN(2) == 0 {
			a := netip.AddrFrom4([4]byte{byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
			ps = append(ps, netip.PrefixFrom(a, 6+r.IntN(27)).Masked())
		} else {
			var b [16]byte
			b[0], b[1], b[15] = 0x20, byte(r.IntN(4)), byte(r.IntN(256))
			ps = append(ps, netip.PrefixFrom(netip.AddrFrom16(b), 8+r.IntN(121)).Masked())
		}
	}
	ps = append(ps, netip.MustParsePrefix("255.255.255.0/24"), netip.MustParsePrefix("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120"))
	tab := newNetTable(ps)
	probe := func(a netip.Addr) {
		want := false
		for _, p := range ps {
			if p.Contains(a) {
				want = true
			}
		}
		if got := tab.has(a); got != want {
			t.Fatalf("has(%s) = %v, want %v", a, got, want)
		}
	}
	for range 20_000 {
		probe(netip.AddrFrom4([4]byte{byte(r.IntN(5)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}))
		var b [16]byte
		b[0], b[1], b[15] = 0x20, byte(r.IntN(5)), byte(r.IntN(256))
		b[2] = byte(r.IntN(3))
		probe(netip.AddrFrom16(b))
	}
	probe(netip.MustParseAddr("255.255.255.255"))
	probe(netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))
	for _, p := range ps {
		probe(p.Addr())
	}
	all := newNetTable([]netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")})
	one := newNetTable([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	for _, a := range []string{"0.0.0.0", "255.255.255.255", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "10.0.0.1"} {
		if !all.has(netip.MustParseAddr(a)) {
			t.Errorf("%s not in 0.0.0.0/0 or ::/0", a)
		}
	}
	if !one.has(netip.MustParseAddr("10.255.0.1")) || one.has(netip.MustParseAddr("9.255.255.255")) || one.has(netip.MustParseAddr("11.0.0.0")) || one.has(netip.MustParseAddr("::a00:1")) {
		t.Error("one network's table answers wrong")
	}
}

// TestHashKeyLostIsPutBack: a hash key Redis lost while lists exist is
// never replaced by a new one: a starting node refuses, a running node's
// Refresh puts its own back (and says so), and then a node starts again
// with the same hashes; a different key is reported.
func TestHashKeyLostIsPutBack(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx, s := ctxOf(t), NewStore(rdb)
	newList(t, s, "ids", KindUser, []string{"mallory"})
	view := NewSet(s)
	if err := view.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, hashKeyKey).Err(); err != nil {
		t.Fatal(err)
	}
	if err := NewStore(rdb).Init(ctx); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Init without the key while a list exists: %v, want a refusal", err)
	}
	if err := view.Refresh(ctx); err == nil || !strings.Contains(err.Error(), "put its own back") {
		t.Fatalf("Refresh without the key: %v, want it put back", err)
	}
	again := NewStore(rdb)
	if err := again.Init(ctx); err != nil || again.Hash("mallory") != s.Hash("mallory") {
		t.Fatalf("Init after the key came back: %v, or another hash", err)
	}
	if err := view.Refresh(ctx); err != nil {
		t.Fatalf("Refresh with the key back: %v", err)
	}
	if err := rdb.Set(ctx, hashKeyKey, strings.Repeat("x", 16), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := view.Refresh(ctx); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("Refresh with another key: %v, want it reported", err)
	}
	if view.User("ids", "mallory") != door.Maybe {
		t.Fatal("the node stopped answering with its own key")
	}
}
