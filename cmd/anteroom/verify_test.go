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
