package lists

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// TestLoadReplaceAppendDryRun: counts of a load, an append (duplicates
// within the upload and against the list), a dry run (nothing changes)
// and a replace; every change bumps the Version.
func TestLoadReplaceAppendDryRun(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		m0, err := s.Create(ctx, "vip", KindUser)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Load(ctx, "vip", strings.NewReader("user_id\nu1\n\"u2\",a\n u3 \nu1\n\n"), LoadOptions{Replace: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Read != 4 || res.Added != 3 || res.Duplicates != 1 || res.Meta.Count != 3 || res.Meta.Version <= m0.Version {
			t.Fatalf("replace: %+v, want read 4, added 3, duplicates 1, count 3, a new version", res)
		}
		res2, err := s.Load(ctx, "vip", strings.NewReader(`{"value":"u3"}`+"\n"+`{"value": "u4", "x": 1}`+"\n"), LoadOptions{Format: NDJSON})
		if err != nil {
			t.Fatal(err)
		}
		if res2.Read != 2 || res2.Added != 1 || res2.Duplicates != 1 || res2.Meta.Count != 4 || res2.Meta.Version <= res.Meta.Version {
			t.Fatalf("append: %+v, want read 2, added 1, duplicates 1, count 4", res2)
		}
		before := export(t, s, "vip")
		dry, err := s.Load(ctx, "vip", strings.NewReader("a\nb\n"), LoadOptions{Replace: true, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if dry.Meta.Count != 2 || dry.Added != 2 {
			t.Fatalf("dry run: %+v, want count 2", dry)
		}
		if m, _ := s.Get(ctx, "vip"); m.Count != 4 || m.Version != res2.Meta.Version || export(t, s, "vip") != before {
			t.Fatalf("a dry run changed the list: %+v", m)
		}
		rep, err := s.Load(ctx, "vip", strings.NewReader("a\nb\n"), LoadOptions{Replace: true})
		if err != nil || rep.Meta.Count != 2 {
			t.Fatalf("replace: %+v, %v", rep, err)
		}
		if got := strings.Count(export(t, s, "vip"), "\n"); got != 2 {
			t.Fatalf("export has %d lines after the replace, want 2", got)
		}
		empty, err := s.Load(ctx, "vip", strings.NewReader("value\n"), LoadOptions{Replace: true})
		if err != nil || empty.Meta.Count != 0 || export(t, s, "vip") != "" {
			t.Fatalf("replace by nothing: %+v, %v", empty, err)
		}
	})
}

// TestLoadLineErrorAppliesNothing: a malformed line anywhere is reported
// by number and nothing of the upload is applied, in either mode.
func TestLoadLineErrorAppliesNothing(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		newList(t, s, "ids", KindUser, []string{"keep1", "keep2"})
		nets := "10.0.0.0/8\n"
		if _, err := s.Create(ctx, "nets", KindNetwork); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(ctx, "nets", strings.NewReader(nets), LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			list, body string
			format     Format
			line       int
		}{
			{"ids", "a\nb\n\"unclosed\nd\n", CSV, 3},
			{"ids", "a\nb\nc\x01d\n", CSV, 3},
			{"ids", "a\n\nb\"c\n", CSV, 3},
			{"ids", "{\"value\":\"a\"}\n{\"valu\":\"b\"}\n", NDJSON, 2},
			{"ids", "{\"value\":\"a\"}\nnot json\n", NDJSON, 2},
			{"ids", "{\"value\":\"a\"}\n{\"value\":\"\"}\n", NDJSON, 2},
			{"ids", "a\n" + strings.Repeat("x", MaxValueBytes+1) + "\n", CSV, 2},
			{"ids", "a\n" + strings.Repeat("x", MaxLineBytes+1) + "\n", CSV, 2},
			{"nets", "network\n192.168.0.0/16\n300.1.2.3\n", CSV, 3},
			{"nets", "::1\nfe80::1%eth0\n", CSV, 2},
			{"nets", "::ffff:10.0.0.0/90\n", CSV, 1},
		}
		for _, c := range cases {
			before, _ := s.Get(ctx, c.list)
			exp := export(t, s, c.list)
			for _, replace := range []bool{true, false} {
				_, err := s.Load(ctx, c.list, strings.NewReader(c.body), LoadOptions{Format: c.format, Replace: replace})
				var le *LineError
				if !errors.As(err, &le) || le.Line != c.line || !errors.Is(err, ErrInvalid) {
					t.Errorf("%q (replace %v): %v, want a line error on line %d", c.body[:min(len(c.body), 40)], replace, err, c.line)
				}
			}
			if after, _ := s.Get(ctx, c.list); after != before || export(t, s, c.list) != exp {
				t.Errorf("%q: a failed upload changed the list: %+v -> %+v", c.body[:min(len(c.body), 40)], before, after)
			}
		}
		if _, err := s.Load(ctx, "ids", strings.NewReader("a\n"), LoadOptions{Format: "xml"}); !errors.Is(err, ErrInvalid) {
			t.Errorf("format xml: %v, want ErrInvalid", err)
		}
		if _, err := s.Load(ctx, "nope", strings.NewReader("a\n"), LoadOptions{}); !errors.Is(err, ErrNoList) {
			t.Errorf("load of an unknown list: %v, want ErrNoList", err)
		}
	})
}

// TestLoadTooLarge: an upload over Max, or an append that would make the
// list longer than Max, is ErrTooLarge and changes nothing.
func TestLoadTooLarge(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		m := newList(t, s, "small", KindUser, []string{"a", "b"})
		if _, err := s.Load(ctx, "small", strings.NewReader("1\n2\n3\n4\n"), LoadOptions{Replace: true, Max: 3}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("4 values, max 3: %v, want ErrTooLarge", err)
		}
		if _, err := s.Load(ctx, "small", strings.NewReader("1\n2\n"), LoadOptions{Max: 3}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("append to 4, max 3: %v, want ErrTooLarge", err)
		}
		if res, err := s.Load(ctx, "small", strings.NewReader("a\n1\n"), LoadOptions{Max: 3}); err != nil || res.Meta.Count != 3 {
			t.Fatalf("append to 3 (a duplicate), max 3: %+v, %v", res, err)
		}
		if got, _ := s.Get(ctx, "small"); got.Count != 3 || got.Version == m.Version {
			t.Fatalf("after: %+v", got)
		}
	})
}

// TestCreateGetListDelete: names and kinds are checked, a name is taken
// once, List is by name, Delete removes the list.
func TestCreateGetListDelete(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		for _, bad := range []struct {
			name string
			kind Kind
		}{{"Bad", KindUser}, {"", KindUser}, {"-x", KindUser}, {"a{b}", KindUser}, {"ok", "email"}, {"ok", ""}} {
			if _, err := s.Create(ctx, bad.name, bad.kind); !errors.Is(err, ErrInvalid) {
				t.Errorf("create %q %q: %v, want ErrInvalid", bad.name, bad.kind, err)
			}
		}
		for _, n := range []string{"zeta", "alpha", "sale-1.vip"} {
			if _, err := s.Create(ctx, n, KindDevice); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Create(ctx, "alpha", KindUser); !errors.Is(err, ErrExists) {
			t.Fatalf("second create: %v, want ErrExists", err)
		}
		all, err := s.List(ctx)
		if err != nil || len(all) != 3 || all[0].Name != "alpha" || all[1].Name != "sale-1.vip" || all[2].Kind != KindDevice {
			t.Fatalf("List = %+v, %v", all, err)
		}
		if err := s.Delete(ctx, "alpha"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "alpha"); !errors.Is(err, ErrNoList) {
			t.Fatalf("get after delete: %v, want ErrNoList", err)
		}
		if err := s.Delete(ctx, "alpha"); !errors.Is(err, ErrNoList) {
			t.Fatalf("second delete: %v, want ErrNoList", err)
		}
	})
}

// TestAddRemove: single entries, no-ops when already there or absent, a
// value the kind refuses.
func TestAddRemove(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		m := newList(t, s, "ids", KindUser, []string{"a"})
		m1, err := s.Add(ctx, "ids", "b")
		if err != nil || m1.Count != 2 || m1.Version <= m.Version {
			t.Fatalf("add b: %+v, %v", m1, err)
		}
		if m2, err := s.Add(ctx, "ids", "b"); err != nil || m2 != m1 {
			t.Fatalf("add b again: %+v, %v, want no change", m2, err)
		}
		m3, err := s.Remove(ctx, "ids", "a")
		if err != nil || m3.Count != 1 {
			t.Fatalf("remove a: %+v, %v", m3, err)
		}
		if m4, err := s.Remove(ctx, "ids", "a"); err != nil || m4 != m3 {
			t.Fatalf("remove a again: %+v, %v", m4, err)
		}
		if _, err := s.Add(ctx, "ids", "bad\nid"); !errors.Is(err, ErrInvalid) {
			t.Fatalf("add a control character: %v", err)
		}
		if _, err := s.Add(ctx, "nope", "x"); !errors.Is(err, ErrNoList) {
			t.Fatalf("add to an unknown list: %v", err)
		}
		if _, err := s.Create(ctx, "nets", KindNetwork); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(ctx, "nets", "not-an-ip"); !errors.Is(err, ErrInvalid) {
			t.Fatalf("add a bad network: %v", err)
		}
		if _, err := s.Add(ctx, "nets", "10.1.2.3/8"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Remove(ctx, "nets", "10.0.0.0/8"); err != nil {
			t.Fatal(err)
		}
		if got := export(t, s, "nets"); got != "" {
			t.Fatalf("nets after add and remove of the same network: %q", got)
		}
	})
}

// TestConcurrentChangesSerialised: adds from several nodes at once, and a
// load beside them, lose nothing: changes to a list are serialised by its
// lock, and its copy ends equal to it.
func TestConcurrentChangesSerialised(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxOf(t)
		stores := []*Store{NewStore(rdb), NewStore(rdb), NewStore(rdb)}
		newList(t, stores[0], "busy", KindUser, nil)
		if err := stores[0].Sync(ctx, sale("ev", 1, false, []string{"busy"}, nil)); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 64)
		for i, s := range stores {
			go func() {
				for j := range 20 {
					_, err := s.Add(ctx, "busy", "n"+strconv.Itoa(i)+"-"+strconv.Itoa(j))
					errs <- err
				}
			}()
		}
		go func() {
			_, err := stores[1].Load(ctx, "busy", csvOf(ids("bulk", 500)), LoadOptions{})
			errs <- err
		}()
		for range 61 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		m, err := stores[2].Get(ctx, "busy")
		if err != nil || m.Count != 560 {
			t.Fatalf("after 60 adds and a load of 500: %+v, %v, want 560 entries", m, err)
		}
		key := CopyKey(queue.LaneTag("ev", 0), "busy")
		vals, err := rdb.HVals(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, v := range vals {
			n += len(v) / 6
		}
		if n != 560 || !listHas(t, rdb, stores[0], key, "n2-19") || !listHas(t, rdb, stores[0], key, "bulk-499") {
			t.Fatalf("the copy holds %d entries, want 560", n)
		}
	})
}
