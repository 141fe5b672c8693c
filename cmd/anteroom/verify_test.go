package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/queue"
)

func TestVerifyCommand(t *testing.T) {
	seedHex := strings.Repeat("ab", 32)
	seed, _ := queue.ParseSeedHex(seedHex)
	p, err := queue.NewPermutation(seed, 1000)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		seq, window int64
		want        int64
	}{
		{1, 1000, queue.Position(p, 1)},
		{777, 1000, queue.Position(p, 777)},
		{1001, 1000, 1001},
		{5, 0, 5},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		args := []string{"verify", "--seed", seedHex, "--window", fmt.Sprint(tc.window), "--seq", fmt.Sprint(tc.seq)}
		if err := run(context.Background(), args, func(string) string { return "" }, &out, &errb); err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errb.String())
		}
		if !strings.Contains(out.String(), fmt.Sprintf("position %d\n", tc.want)) {
			t.Errorf("%v: got %q, want position %d", args, out.String(), tc.want)
		}
	}
	for _, bad := range [][]string{
		{"verify", "--seed", "zz", "--window", "3", "--seq", "1"},
		{"verify", "--seed", seedHex, "--window", "3"},
		{"verify", "--seed", strings.Repeat("ab", 31), "--window", "3", "--seq", "1"},
	} {
		if err := run(context.Background(), bad, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: accepted, want an error", bad)
		}
	}
}

// TestVerifyShards recomputes window positions of a sale of join shards
// from the seed, the shard window sizes and the user, as the service does.
func TestVerifyShards(t *testing.T) {
	seedHex := strings.Repeat("cd", 32)
	seed, _ := queue.ParseSeedHex(seedHex)
	sizes := []int64{3, 0, 5, 2}
	p, err := queue.NewPermutation(seed, 10)
	if err != nil {
		t.Fatal(err)
	}
	user := "someone"
	s := queue.ShardOf(user, len(sizes))
	var off int64
	for _, w := range sizes[:s] {
		off += w
	}
	if sizes[s] == 0 {
		t.Fatalf("pick a user on a shard with a window (shard %d)", s)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--user", user, "--seq", "1"}, fmt.Sprintf("position %d\n", p.Apply(off+1))},
		{[]string{"--shard", "2", "--seq", "5"}, fmt.Sprintf("position %d\n", p.Apply(3+5))},
		{[]string{"--shard", "0", "--seq", "1"}, fmt.Sprintf("position %d\n", p.Apply(1))},
		{[]string{"--shard", "3", "--seq", "3"}, "a later joiner"},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		args := append([]string{"verify", "--seed", seedHex, "--shard-windows", "3,0,5,2"}, tc.args...)
		if err := run(context.Background(), args, func(string) string { return "" }, &out, &errb); err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errb.String())
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: got %q, want %q", args, out.String(), tc.want)
		}
	}
	for _, bad := range [][]string{
		{"verify", "--seed", seedHex, "--shard-windows", "3,x", "--shard", "0", "--seq", "1"},
		{"verify", "--seed", seedHex, "--shard-windows", "3,4", "--seq", "1"},
		{"verify", "--seed", seedHex, "--shard-windows", "3,4", "--shard", "2", "--seq", "1"},
	} {
		if err := run(context.Background(), bad, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: accepted, want an error", bad)
		}
	}
}
