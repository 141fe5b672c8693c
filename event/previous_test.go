package event

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
)

// lostMembers reports the members of old, at any depth, that cur lacks or
// holds with another JSON type.
func lostMembers(path string, old, cur any) []string {
	o, ok := old.(map[string]any)
	if !ok {
		if reflect.TypeOf(old) != reflect.TypeOf(cur) && old != nil {
			return []string{path + " (type changed)"}
		}
		return nil
	}
	c, ok := cur.(map[string]any)
	if !ok {
		return []string{path + " (no longer an object)"}
	}
	var lost []string
	for k, v := range o {
		w, ok := c[k]
		if !ok {
			lost = append(lost, path+k+" (missing)")
			continue
		}
		lost = append(lost, lostMembers(path+k+".", v, w)...)
	}
	slices.Sort(lost)
	return lost
}

// TestPreviousReleaseConfig checks the rolling-upgrade rule
// (docs/operate.md, "Rolling upgrades") on the stored sale configuration,
// which every node of both releases reads every 100 ms during an upgrade:
// testdata/previous/config.json is a configuration as the previous
// release stores it. This release reads it with every setting, and stores
// every member it has, at any depth and with the same JSON type — a
// renamed or retyped setting would read as its zero value on a node of
// the previous release.
func TestPreviousReleaseConfig(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	s := NewStore(rdb)
	old, err := os.ReadFile(filepath.Join("testdata", "previous", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	old = bytes.TrimSpace(old)

	if err := rdb.Set(ctx, configKey("drop-1"), old, 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "drop-1")
	if err != nil {
		t.Fatalf("read the previous release's configuration: %v", err)
	}
	want := valid()
	want.Version, want.Seed, want.SeedCommitment = 1,
		"510a6ff009b66904af8235794d8e435107e7f8c722bf1ed5d0ea17fb28da9a82",
		"7a7ced1817bc976a4262a7a31a024a6242197a5fa3ac21fb8485728553165873"
	want.LaneSeeds = true
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the previous release's configuration reads\n%+v\nwant\n%+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("the previous release's configuration does not validate: %v", err)
	}

	fresh := valid()
	fresh.ID = "drop-2"
	if _, err := s.Put(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	raw, err := rdb.Get(ctx, configKey(fresh.ID)).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var o, c any
	if err := json.Unmarshal(old, &o); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if lost := lostMembers("", o, c); len(lost) > 0 {
		t.Errorf("a configuration this release stores lacks members the previous release reads: %v\nprevious %s\nnow      %s", lost, old, raw)
	}
}
